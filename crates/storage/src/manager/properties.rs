//! Java's `.properties` text, as `java.util.Properties.load` reads it (Kafka's
//! `server.properties` and `meta.properties` are this): `#` and `!` comment lines; a key ended by
//! the first unescaped `=`, `:` or white space; a line ending in an odd number of backslashes
//! continued on the next (whose leading white space is dropped); and the escapes `\t`, `\n`,
//! `\r`, `\f`, `\uXXXX`, and `\` before any other character for that character. Values are
//! trimmed, as Kafka trims the values it parses.

use std::collections::BTreeMap;

/// The key-value pairs of `text`; a key given twice keeps its last value, as in Java.
pub fn parse_properties(text: &str) -> BTreeMap<String, String> {
    logical_lines(text)
        .into_iter()
        .filter_map(|line| key_value(&line))
        .collect()
}

/// The logical lines of `text`: comments and blank lines dropped, continuations joined, each
/// still escaped.
fn logical_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut current: Option<String> = None;
    for natural in text.lines() {
        let stripped = natural.trim_start_matches([' ', '\t', '\u{c}']);
        let line = match current.take() {
            Some(mut joined) => {
                joined.push_str(stripped);
                joined
            }
            None => {
                if stripped.is_empty() || stripped.starts_with(['#', '!']) {
                    continue;
                }
                stripped.to_owned()
            }
        };
        let trailing = line.len() - line.trim_end_matches('\\').len();
        if trailing % 2 == 1 {
            current = Some(line[..line.len() - 1].to_owned());
        } else {
            lines.push(line);
        }
    }
    if let Some(last) = current {
        lines.push(last);
    }
    lines
}

/// A logical line's key and value, unescaped.
fn key_value(line: &str) -> Option<(String, String)> {
    let mut chars = line.char_indices().peekable();
    let mut key_end = line.len();
    while let Some((at, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '=' | ':' | ' ' | '\t' | '\u{c}' => {
                key_end = at;
                break;
            }
            _ => {}
        }
    }
    let key = unescape(&line[..key_end]);
    let mut rest = line[key_end..].trim_start_matches([' ', '\t', '\u{c}']);
    if let Some(after) = rest.strip_prefix(['=', ':']) {
        rest = after.trim_start_matches([' ', '\t', '\u{c}']);
    }
    (!key.is_empty()).then(|| (key, unescape(rest).trim().to_owned()))
}

fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\u{c}'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    Some(decoded) if hex.len() == 4 => out.push(decoded),
                    // Java refuses a malformed \u escape; the text is kept as written.
                    _ => {
                        out.push_str("\\u");
                        out.push_str(&hex);
                    }
                }
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_java_properties_reads() {
        let text = r#"
# a comment
! another
plain=value
spaced = value with spaces  
colon: value
whitespace value
escaped\=key=a\:b\\c\tend
unicode=caf\u00e9
listener.name.clients.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \
    user_admin="admin-secret" \
    user_alice="alice-secret";
empty=
last=one
last=two
dangling=ends \
"#;
        let properties = parse_properties(text);
        let get = |key: &str| properties.get(key).map(String::as_str);
        assert_eq!(get("plain"), Some("value"));
        assert_eq!(get("spaced"), Some("value with spaces"));
        assert_eq!(get("colon"), Some("value"));
        assert_eq!(get("whitespace"), Some("value"));
        assert_eq!(get("escaped=key"), Some("a:b\\c\tend"));
        assert_eq!(get("unicode"), Some("café"));
        assert_eq!(
            get("listener.name.clients.plain.sasl.jaas.config"),
            Some(
                r#"org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret" user_alice="alice-secret";"#
            )
        );
        assert_eq!(get("empty"), Some(""));
        assert_eq!(get("last"), Some("two"));
        assert_eq!(get("dangling"), Some("ends"));
        assert_eq!(properties.len(), 10, "{properties:?}");
    }

    #[test]
    fn an_even_number_of_trailing_backslashes_does_not_continue() {
        let properties = parse_properties("a=x\\\\\nb=y\n");
        assert_eq!(properties.get("a").map(String::as_str), Some("x\\"));
        assert_eq!(properties.get("b").map(String::as_str), Some("y"));
    }
}
