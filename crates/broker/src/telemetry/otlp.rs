//! The metrics a client pushes: an OpenTelemetry `MetricsData` message (OTLP,
//! `opentelemetry/proto/metrics/v1/metrics.proto`), decoded into the number series the
//! Prometheus endpoint shows. Only the fields read are declared; protobuf skips the others.
//! Gauges and sums are read (what Kafka's clients push); histograms and summaries are not shown.
//! Only the metrics a client was asked for are read, and no more than a budget of bytes, counted
//! before anything is copied.

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

/// Why a push's points were not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unread {
    /// The bytes are not a `MetricsData`.
    NotMetrics,
    /// The points wanted would take more than the budget.
    TooLarge,
}

/// The bytes a point is charged: what it holds, and a fixed share for its keeping.
pub fn point_bytes(name: &str, labels: &[(String, String)]) -> usize {
    name.len()
        + labels
            .iter()
            .map(|(key, value)| key.len() + value.len() + 16)
            .sum::<usize>()
        + 64
}

/// The points of a pushed `MetricsData` whose metric names start with one of `wanted` (`*`:
/// every metric; none: nothing), as long as they take at most `budget` bytes.
pub fn decode(payload: &[u8], wanted: &[String], budget: usize) -> Result<Vec<Point>, Unread> {
    let data = MetricsData::decode(payload).map_err(|_| Unread::NotMetrics)?;
    let every = wanted.iter().any(|prefix| prefix == "*");
    let is_wanted = |name: &str| {
        every
            || wanted
                .iter()
                .any(|prefix| name.starts_with(prefix.as_str()))
    };
    let mut points = Vec::new();
    let mut charged = 0usize;
    for resource_metrics in &data.resource_metrics {
        let resource = resource_metrics
            .resource
            .as_ref()
            .map_or(&[][..], |resource| &resource.attributes[..]);
        for metric in resource_metrics
            .scope_metrics
            .iter()
            .flat_map(|scope| &scope.metrics)
            .filter(|metric| is_wanted(&metric.name))
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
                // Charged before the labels are copied, so that a push cannot make the broker
                // build more than its budget.
                let label_bytes: usize = resource
                    .iter()
                    .chain(&point.attributes)
                    .map(|pair| pair.key.len() + text_len(pair.value.as_ref()) + 16)
                    .sum();
                charged += metric.name.len() + label_bytes + 64;
                if charged > budget {
                    return Err(Unread::TooLarge);
                }
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
    Ok(points)
}

/// The length of what [`text`] makes of `value`, without making it (numbers at most 24 bytes).
fn text_len(value: Option<&AnyValue>) -> usize {
    match value.and_then(|value| value.string_value.as_ref()) {
        Some(text) => text.len(),
        None => 24,
    }
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

/// `MetricsData` of gauges and delta sums as a client pushes it, for the tests.
#[cfg(test)]
pub(crate) mod payload {
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
        let all = ["*".to_owned()];
        let points = decode(&bytes, &all, usize::MAX).unwrap();
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
        let all = ["*".to_owned()];
        assert_eq!(
            decode(&[0x0a, 0xff, 0xff, 0xff, 0x0f], &all, usize::MAX),
            Err(Unread::NotMetrics)
        );
        assert_eq!(decode(b"", &all, usize::MAX), Ok(Vec::new()));
    }

    #[test]
    fn only_the_metrics_asked_for_are_read_and_within_the_budget() {
        let bytes = payload::metrics_data(
            &[("client_rack", "r1")],
            &[
                (
                    "org.apache.kafka.producer.record.send.rate",
                    false,
                    &[],
                    2.5,
                ),
                ("org.apache.kafka.consumer.fetch.rate", false, &[], 1.0),
            ],
        );
        let producer = ["org.apache.kafka.producer.".to_owned()];
        let read = decode(&bytes, &producer, usize::MAX).unwrap();
        assert_eq!(read.len(), 1);
        assert_eq!(read[0].name, "org.apache.kafka.producer.record.send.rate");
        assert_eq!(decode(&bytes, &[], usize::MAX), Ok(Vec::new()));
        let one = point_bytes(&read[0].name, &read[0].labels);
        assert_eq!(decode(&bytes, &producer, one).map(|p| p.len()), Ok(1));
        assert_eq!(decode(&bytes, &producer, one - 1), Err(Unread::TooLarge));
    }
}
