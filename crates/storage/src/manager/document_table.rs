//! The body of a document that keeps values by owner and key (a group's configs, a
//! client-metrics subscription's): one line per value, `owner<TAB>key<TAB>value`, with
//! backslash, tab, carriage return and newline escaped (`\\`, `\t`, `\r`, `\n`), since an owner's
//! name (a group id) may hold any character.

use std::collections::BTreeMap;

/// Values by owner, then by key.
pub type Table = BTreeMap<String, BTreeMap<String, String>>;

/// The body holding `table`.
pub fn render_table(table: &Table) -> String {
    let mut body = String::new();
    for (owner, values) in table {
        for (key, value) in values {
            body.push_str(&format!(
                "{}\t{}\t{}\n",
                escape(owner),
                escape(key),
                escape(value)
            ));
        }
    }
    body
}

/// The table a body holds; an error names the line (from 0) and what is wrong with it.
pub fn parse_table(body: &str) -> Result<Table, (usize, String)> {
    let mut table: Table = BTreeMap::new();
    for (number, line) in body.lines().enumerate() {
        let fields: Vec<&str> = line.split('\t').collect();
        let [owner, key, value] = fields[..] else {
            return Err((
                number,
                format!("expected owner, key and value separated by tabs, found {line:?}"),
            ));
        };
        let field = |text: &str| unescape(text).map_err(|reason| (number, reason));
        table
            .entry(field(owner)?)
            .or_default()
            .insert(field(key)?, field(value)?);
    }
    Ok(table)
}

fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => escaped.push_str("\\\\"),
            '\t' => escaped.push_str("\\t"),
            '\r' => escaped.push_str("\\r"),
            '\n' => escaped.push_str("\\n"),
            c => escaped.push(c),
        }
    }
    escaped
}

fn unescape(text: &str) -> Result<String, String> {
    let mut plain = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            plain.push(c);
            continue;
        }
        plain.push(match chars.next() {
            Some('\\') => '\\',
            Some('t') => '\t',
            Some('r') => '\r',
            Some('n') => '\n',
            other => return Err(format!("unknown escape \\{}", other.unwrap_or(' '))),
        });
    }
    Ok(plain)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_name_key_and_value_come_back_as_written() {
        let mut table = Table::new();
        table
            .entry("g\t1\\\n\r".to_owned())
            .or_default()
            .insert("k".to_owned(), "a\\tb\nc".to_owned());
        table
            .entry(String::new())
            .or_default()
            .insert("empty".to_owned(), String::new());
        assert_eq!(parse_table(&render_table(&table)), Ok(table));
    }

    #[test]
    fn a_bad_line_is_named() {
        assert_eq!(
            parse_table("g\tk\tv\ng\tk\n").unwrap_err().0,
            1,
            "the second line lacks a value"
        );
        assert!(parse_table("g\tk\t\\q\n").unwrap_err().1.contains("\\q"));
    }
}
