//! The metrics a client pushes: an OpenTelemetry `MetricsData` message (OTLP,
//! `opentelemetry/proto/metrics/v1/metrics.proto`), decoded into the number series the
//! Prometheus endpoint shows. Only the fields read are declared; protobuf skips the others.
//! Gauges and sums are read (what Kafka's clients push); histograms and summaries are not shown.

use prost::Message;

#[derive(Clone, PartialEq, Message)]
struct MetricsData {
    #[prost(message, repeated, tag = "1")]
    resource_metrics: Vec<ResourceMetrics>,
}

#[derive(Clone, PartialEq, Message)]
struct ResourceMetrics {
    #[prost(message, optional, tag = "1")]
    resource: Option<Resource>,
    #[prost(message, repeated, tag = "2")]
    scope_metrics: Vec<ScopeMetrics>,
}

#[derive(Clone, PartialEq, Message)]
struct Resource {
    #[prost(message, repeated, tag = "1")]
    attributes: Vec<KeyValue>,
}

#[derive(Clone, PartialEq, Message)]
struct ScopeMetrics {
    #[prost(message, repeated, tag = "2")]
    metrics: Vec<Metric>,
}

#[derive(Clone, PartialEq, Message)]
struct Metric {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(message, optional, tag = "5")]
    gauge: Option<Points>,
    #[prost(message, optional, tag = "7")]
    sum: Option<Sum>,
}

/// A gauge: its points.
#[derive(Clone, PartialEq, Message)]
struct Points {
    #[prost(message, repeated, tag = "1")]
    data_points: Vec<NumberDataPoint>,
}

#[derive(Clone, PartialEq, Message)]
struct Sum {
    #[prost(message, repeated, tag = "1")]
    data_points: Vec<NumberDataPoint>,
    /// 1: each point is the change since the last push; 2: the running total.
    #[prost(int32, tag = "2")]
    aggregation_temporality: i32,
}

#[derive(Clone, PartialEq, Message)]
struct NumberDataPoint {
    #[prost(message, repeated, tag = "7")]
    attributes: Vec<KeyValue>,
    #[prost(double, optional, tag = "4")]
    as_double: Option<f64>,
    #[prost(sfixed64, optional, tag = "6")]
    as_int: Option<i64>,
}

#[derive(Clone, PartialEq, Message)]
struct KeyValue {
    #[prost(string, tag = "1")]
    key: String,
    #[prost(message, optional, tag = "2")]
    value: Option<AnyValue>,
}

#[derive(Clone, PartialEq, Message)]
struct AnyValue {
    #[prost(string, optional, tag = "1")]
    string_value: Option<String>,
    #[prost(bool, optional, tag = "2")]
    bool_value: Option<bool>,
    #[prost(int64, optional, tag = "3")]
    int_value: Option<i64>,
    #[prost(double, optional, tag = "4")]
    double_value: Option<f64>,
}

/// How a point's value reads over pushes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Gauge,
    /// A sum each push adds to (delta temporality, which Kafka asks clients for).
    Delta,
    /// A sum pushed as its running total.
    Cumulative,
}

/// One point of one pushed metric.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// The metric's name as pushed (`org.apache.kafka.producer.record.send.total`).
    pub name: String,
    pub kind: Kind,
    /// The resource's attributes, then the point's own.
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

/// The points of a pushed `MetricsData`; `None` when the bytes are not one.
pub fn decode(payload: &[u8]) -> Option<Vec<Point>> {
    let data = MetricsData::decode(payload).ok()?;
    let mut points = Vec::new();
    for resource_metrics in &data.resource_metrics {
        let resource = resource_metrics
            .resource
            .as_ref()
            .map_or(&[][..], |resource| &resource.attributes[..]);
        for metric in resource_metrics
            .scope_metrics
            .iter()
            .flat_map(|scope| &scope.metrics)
        {
            let (kind, data_points) = match (&metric.gauge, &metric.sum) {
                (Some(gauge), _) => (Kind::Gauge, &gauge.data_points),
                (None, Some(sum)) if sum.aggregation_temporality == 1 => {
                    (Kind::Delta, &sum.data_points)
                }
                (None, Some(sum)) => (Kind::Cumulative, &sum.data_points),
                (None, None) => continue,
            };
            for point in data_points {
                let Some(value) = point.as_double.or(point.as_int.map(|value| value as f64)) else {
                    continue;
                };
                points.push(Point {
                    name: metric.name.clone(),
                    kind,
                    labels: resource
                        .iter()
                        .chain(&point.attributes)
                        .map(|pair| (pair.key.clone(), text(pair.value.as_ref())))
                        .collect(),
                    value,
                });
            }
        }
    }
    Some(points)
}

fn text(value: Option<&AnyValue>) -> String {
    let Some(value) = value else {
        return String::new();
    };
    if let Some(text) = &value.string_value {
        text.clone()
    } else if let Some(flag) = value.bool_value {
        flag.to_string()
    } else if let Some(number) = value.int_value {
        number.to_string()
    } else if let Some(number) = value.double_value {
        number.to_string()
    } else {
        String::new()
    }
}

/// `MetricsData` of gauges and delta sums as a client pushes it, for the tests of whoever
/// serves pushes.
pub mod payload {
    use super::*;

    /// One pushed point: its metric's name, whether it is a delta sum (else a gauge), its
    /// labels and its value.
    pub type Pushed<'a> = (&'a str, bool, &'a [(&'a str, &'a str)], f64);

    /// One resource with `resource` attributes, holding each metric.
    pub fn metrics_data(resource: &[(&str, &str)], metrics: &[Pushed<'_>]) -> Vec<u8> {
        let pairs = |pairs: &[(&str, &str)]| -> Vec<KeyValue> {
            pairs
                .iter()
                .map(|(key, value)| KeyValue {
                    key: (*key).to_owned(),
                    value: Some(AnyValue {
                        string_value: Some((*value).to_owned()),
                        ..AnyValue::default()
                    }),
                })
                .collect()
        };
        let metrics = metrics
            .iter()
            .map(|(name, delta, labels, value)| {
                let points = vec![NumberDataPoint {
                    attributes: pairs(labels),
                    as_double: Some(*value),
                    as_int: None,
                }];
                Metric {
                    name: (*name).to_owned(),
                    gauge: (!delta).then(|| Points {
                        data_points: points.clone(),
                    }),
                    sum: delta.then(|| Sum {
                        data_points: points,
                        aggregation_temporality: 1,
                    }),
                }
            })
            .collect();
        MetricsData {
            resource_metrics: vec![ResourceMetrics {
                resource: Some(Resource {
                    attributes: pairs(resource),
                }),
                scope_metrics: vec![ScopeMetrics { metrics }],
            }],
        }
        .encode_to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gauges_and_sums_are_read_with_their_labels() {
        let bytes = payload::metrics_data(
            &[("client_rack", "r1")],
            &[
                (
                    "org.apache.kafka.producer.record.send.rate",
                    false,
                    &[],
                    2.5,
                ),
                (
                    "org.apache.kafka.producer.node.request.total",
                    true,
                    &[("node_id", "0")],
                    7.0,
                ),
            ],
        );
        let points = decode(&bytes).unwrap();
        assert_eq!(points.len(), 2);
        assert_eq!(points[0].kind, Kind::Gauge);
        assert_eq!(points[0].value, 2.5);
        assert_eq!(points[1].kind, Kind::Delta);
        assert_eq!(
            points[1].labels,
            vec![
                ("client_rack".to_owned(), "r1".to_owned()),
                ("node_id".to_owned(), "0".to_owned())
            ]
        );
    }

    #[test]
    fn bytes_that_are_not_metrics_are_refused() {
        assert_eq!(decode(&[0x0a, 0xff, 0xff, 0xff, 0x0f]), None);
        assert_eq!(decode(b""), Some(Vec::new()));
    }
}
