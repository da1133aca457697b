//! Pushed series in Prometheus' text format: a metric's dots and dashes become underscores
//! (`org.apache.kafka.producer.record.send.total` is `org_apache_kafka_producer_record_send_total`),
//! and its labels are who pushed it (`client_instance_id`, `client_id`,
//! `client_software_name`, `client_software_version`) and the point's own attributes. Gauges
//! are gauges; sums are counters (a delta sum shown as its running total).
//!
//! Names under the broker's own prefixes (`kafka_`, `ferrolog_`) are not shown, so that no
//! client can forge a broker metric; nor a series whose name another client pushed under
//! another kind, since a family has one type.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::otlp::Kind;

/// Families by name: the type shown and each series' labels and value.
#[derive(Debug, Default)]
pub struct Exposition {
    families: BTreeMap<String, (Kind, Vec<String>)>,
}

impl Exposition {
    /// Adds one series, unless its name is the broker's or its family has another kind.
    pub fn add(&mut self, name: &str, kind: Kind, labels: &[(String, String)], value: f64) {
        let name = sanitized(name);
        if name.starts_with("kafka_") || name.starts_with("ferrolog_") {
            return;
        }
        let kind = if kind == Kind::Gauge {
            Kind::Gauge
        } else {
            Kind::Cumulative
        };
        let (family_kind, series) = self
            .families
            .entry(name)
            .or_insert_with(|| (kind, Vec::new()));
        if *family_kind != kind {
            return;
        }
        let mut seen = Vec::with_capacity(labels.len());
        let mut text = String::new();
        for (key, value) in labels {
            let key = sanitized(key);
            if key.starts_with("__") || seen.contains(&key) {
                continue;
            }
            if !text.is_empty() {
                text.push(',');
            }
            let _ = write!(text, "{key}=\"{}\"", escaped(value));
            seen.push(key);
        }
        series.push(format!("{{{text}}} {}", number(value)));
    }

    /// The text of every family.
    pub fn render(&self) -> String {
        let mut text = String::new();
        for (name, (kind, series)) in &self.families {
            let kind = if *kind == Kind::Gauge {
                "gauge"
            } else {
                "counter"
            };
            let _ = writeln!(text, "# TYPE {name} {kind}");
            for one in series {
                let _ = writeln!(text, "{name}{one}");
            }
        }
        text
    }
}

/// A Prometheus name: letters, digits and underscores, not starting with a digit.
fn sanitized(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

fn escaped(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn number(value: f64) -> String {
    if value.is_nan() {
        "NaN".to_owned()
    } else if value.is_infinite() {
        if value > 0.0 { "+Inf" } else { "-Inf" }.to_owned()
    } else {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect()
    }

    #[test]
    fn series_are_grouped_by_family_and_made_safe() {
        let mut exposition = Exposition::default();
        let who = labels(&[("client_instance_id", "a"), ("node.id", "0\"\n")]);
        exposition.add(
            "org.apache.kafka.producer.record-send.total",
            Kind::Delta,
            &who,
            3.0,
        );
        exposition.add(
            "org.apache.kafka.producer.record-send.total",
            Kind::Cumulative,
            &who,
            4.0,
        );
        exposition.add(
            "org.apache.kafka.producer.record-send.total",
            Kind::Gauge,
            &who,
            9.0,
        );
        exposition.add("kafka.log.log.size", Kind::Gauge, &who, 1.0);
        exposition.add("1st", Kind::Gauge, &labels(&[("__name__", "x")]), f64::NAN);
        assert_eq!(
            exposition.render(),
            "# TYPE _1st gauge\n_1st{} NaN\n\
             # TYPE org_apache_kafka_producer_record_send_total counter\n\
             org_apache_kafka_producer_record_send_total{client_instance_id=\"a\",node_id=\"0\\\"\\n\"} 3\n\
             org_apache_kafka_producer_record_send_total{client_instance_id=\"a\",node_id=\"0\\\"\\n\"} 4\n"
        );
    }
}
