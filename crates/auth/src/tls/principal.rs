//! The principal of a client authenticated by its certificate, as Kafka makes it: the subject's
//! distinguished name written as Java's `X500Principal.getName()` writes it (RFC 2253), mapped
//! by `ssl.principal.mapping.rules`, prefixed `User:`.
//!
//! The name: relative distinguished names in the reverse of their order in the certificate,
//! joined by `,` (no spaces), the attributes of one joined by `+`; the types `CN`, `L`, `ST`,
//! `O`, `OU`, `C`, `STREET`, `DC` and `UID` by keyword, any other by its dotted OID with the
//! value as `#` and the hex of its DER encoding; in values, `, = + < > # ; " \` are
//! backslash-escaped anywhere, NUL as `\00`, and leading and trailing spaces.
//!
//! The rules: `DEFAULT` (the name as it is) or `RULE:pattern/replacement/[L|U]`, separated by
//! commas and tried in order; a rule applies when its pattern matches the whole name, which is
//! then rewritten with the replacement (`$1` for a group) and lower- or upper-cased. When no
//! rule applies, the client has no principal and is refused.

use std::fmt;

use regex::Regex;

/// One attribute of a name: its type's dotted OID, its value as text when it is of a string
/// type, and its value's DER encoding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attribute {
    pub oid: String,
    pub text: Option<String>,
    pub der: Vec<u8>,
}

/// The keywords Java writes for attribute types (`AVA.toRFC2253String`).
const KEYWORDS: [(&str, &str); 9] = [
    ("2.5.4.3", "CN"),
    ("2.5.4.7", "L"),
    ("2.5.4.8", "ST"),
    ("2.5.4.10", "O"),
    ("2.5.4.11", "OU"),
    ("2.5.4.6", "C"),
    ("2.5.4.9", "STREET"),
    ("0.9.2342.19200300.100.1.25", "DC"),
    ("0.9.2342.19200300.100.1.1", "UID"),
];

/// The name Java gives a subject whose relative distinguished names are `rdns`, in the order
/// the certificate encodes them.
pub fn rfc2253_name(rdns: &[Vec<Attribute>]) -> String {
    rdns.iter()
        .rev()
        .map(|rdn| {
            rdn.iter()
                .map(|attribute| {
                    let keyword = KEYWORDS
                        .iter()
                        .find(|(oid, _)| *oid == attribute.oid)
                        .map(|(_, keyword)| *keyword);
                    match (keyword, &attribute.text) {
                        (Some(keyword), Some(text)) => format!("{keyword}={}", escape(text)),
                        (keyword, _) => {
                            let hex: String = attribute
                                .der
                                .iter()
                                .map(|byte| format!("{byte:02x}"))
                                .collect();
                            format!("{}=#{hex}", keyword.unwrap_or(&attribute.oid))
                        }
                    }
                })
                .collect::<Vec<_>>()
                .join("+")
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn escape(value: &str) -> String {
    let chars: Vec<char> = value.chars().collect();
    // Java escapes the whole run of spaces and carriage returns at either end.
    let edge = |c: &char| *c == ' ' || *c == '\r';
    let leading = chars.iter().take_while(|c| edge(c)).count();
    let trailing = chars.len() - chars.iter().rev().take_while(|c| edge(c)).count();
    let mut out = String::with_capacity(value.len());
    for (index, c) in chars.iter().copied().enumerate() {
        match c {
            ',' | '=' | '+' | '<' | '>' | '#' | ';' | '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\0' => out.push_str("\\00"),
            ' ' | '\r' if index < leading || index >= trailing => {
                out.push('\\');
                out.push(c);
            }
            other => out.push(other),
        }
    }
    out
}

/// `ssl.principal.mapping.rules`, parsed.
#[derive(Clone, Debug)]
pub struct PrincipalRules {
    rules: Vec<Rule>,
    text: String,
}

#[derive(Clone, Debug)]
enum Rule {
    Default,
    Rewrite {
        whole: Regex,
        pattern: Regex,
        replacement: String,
        case: Case,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Case {
    AsIs,
    Lower,
    Upper,
}

/// Why a client certificate gives no principal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoMatchingRule(pub String);

impl fmt::Display for NoMatchingRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Default for PrincipalRules {
    fn default() -> Self {
        Self {
            rules: vec![Rule::Default],
            text: "DEFAULT".into(),
        }
    }
}

impl PrincipalRules {
    /// Parses the rules; the error names the rule that does not parse.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut rules = Vec::new();
        let mut rest = text.trim_start();
        while !rest.is_empty() {
            // Empty rules (`DEFAULT,,DEFAULT`) are skipped, as Kafka's splitter skips them.
            if let Some(after) = rest.strip_prefix(',') {
                rest = after.trim_start();
                continue;
            }
            let (rule, after) = if let Some(after) = rest.strip_prefix("DEFAULT") {
                (Rule::Default, after)
            } else if let Some(body) = rest.strip_prefix("RULE:") {
                let invalid = || format!("Invalid rule: {}", rest.trim());
                let (pattern, after) = until_slash(body).ok_or_else(invalid)?;
                let (replacement, after) = until_slash(after).ok_or_else(invalid)?;
                let (case, after) = match after.chars().next() {
                    Some('L') => (Case::Lower, &after[1..]),
                    Some('U') => (Case::Upper, &after[1..]),
                    _ => (Case::AsIs, after),
                };
                let pattern = pattern.replace("\\/", "/");
                let compile = |source: &str| {
                    Regex::new(source).map_err(|error| format!("Invalid rule: {pattern}: {error}"))
                };
                let pattern = compile(&pattern)?;
                // Groups the pattern has, the whole match not counted.
                let groups = pattern.captures_len() - 1;
                let rule = Rule::Rewrite {
                    whole: compile(&format!("^(?:{})$", pattern.as_str()))?,
                    pattern,
                    replacement: java_replacement(&replacement.replace("\\/", "/"), groups),
                    case,
                };
                (rule, after)
            } else {
                return Err(format!("Invalid rule: {}", rest.trim()));
            };
            let after = after.trim_start();
            rest = match after.strip_prefix(',') {
                Some(next) => next.trim_start(),
                None if after.is_empty() => after,
                None => return Err(format!("Invalid rule: {}", rest.trim())),
            };
            rules.push(rule);
        }
        Ok(Self {
            rules,
            text: text.to_owned(),
        })
    }

    /// The principal's name for the certificate subject `name`.
    pub fn name_of(&self, name: &str) -> Result<String, NoMatchingRule> {
        for rule in &self.rules {
            match rule {
                Rule::Default => return Ok(name.to_owned()),
                Rule::Rewrite {
                    whole,
                    pattern,
                    replacement,
                    case,
                } => {
                    if !whole.is_match(name) {
                        continue;
                    }
                    let rewritten = pattern.replace_all(name, replacement.as_str()).into_owned();
                    return Ok(match case {
                        Case::AsIs => rewritten,
                        Case::Lower => rewritten.to_lowercase(),
                        Case::Upper => rewritten.to_uppercase(),
                    });
                }
            }
        }
        Err(NoMatchingRule(format!(
            "No rules apply to {name}, rules [{}]",
            self.text
        )))
    }
}

/// The text up to the next `/` not escaped by a backslash, and what follows that `/`.
fn until_slash(text: &str) -> Option<(&str, &str)> {
    let mut escaped = false;
    for (at, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '/' => return Some((&text[..at], &text[at + 1..])),
            _ => {}
        }
    }
    None
}

/// A Java `replaceAll` replacement (`$1` a group, `${name}` a named one, `\x` the character x)
/// in the regex crate's syntax (`${1}`, `$$`). A group number beyond the pattern's `groups`
/// stays literal text, as Kafka escapes such references.
fn java_replacement(java: &str, groups: usize) -> String {
    let mut out = String::with_capacity(java.len());
    let mut chars = java.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('$') => out.push_str("$$"),
                Some(other) => out.push(other),
                None => {}
            },
            '$' if chars.peek() == Some(&'{') => {
                // A named group, which the regex crate writes the same way.
                out.push('$');
            }
            '$' => {
                let mut digits = String::new();
                while let Some(digit) = chars.peek().filter(|c| c.is_ascii_digit()) {
                    digits.push(*digit);
                    chars.next();
                }
                match digits.parse::<usize>() {
                    Ok(group) if group <= groups => out.push_str(&format!("${{{group}}}")),
                    _ => {
                        out.push_str("$$");
                        out.push_str(&digits);
                    }
                }
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(oid: &str, value: &str) -> Attribute {
        Attribute {
            oid: oid.into(),
            text: Some(value.into()),
            der: Vec::new(),
        }
    }

    #[test]
    fn names_are_written_as_java_writes_them() {
        // Encoded C, O, OU, CN: written the other way round.
        let rdns = vec![
            vec![text("2.5.4.6", "US")],
            vec![text("2.5.4.10", "Example, Inc.")],
            vec![
                text("2.5.4.11", "eng"),
                text("0.9.2342.19200300.100.1.1", "u1"),
            ],
            vec![text("2.5.4.3", " alice=admin ")],
        ];
        assert_eq!(
            rfc2253_name(&rdns),
            r"CN=\ alice\=admin\ ,OU=eng+UID=u1,O=Example\, Inc.,C=US"
        );
        let email = vec![vec![Attribute {
            oid: "1.2.840.113549.1.9.1".into(),
            text: Some("a@b".into()),
            der: vec![0x16, 0x03, b'a', b'@', b'b'],
        }]];
        assert_eq!(rfc2253_name(&email), "1.2.840.113549.1.9.1=#1603614062");
        assert_eq!(
            rfc2253_name(&[vec![text("2.5.4.3", "a#b;c<d>e\"f\\g+h\0")]]),
            r#"CN=a\#b\;c\<d\>e\"f\\g\+h\00"#
        );
        assert_eq!(
            rfc2253_name(&[vec![text("2.5.4.3", "  a b \r")]]),
            "CN=\\ \\ a b\\ \\\r"
        );
    }

    #[test]
    fn kafkas_documented_rules_map_as_kafka_maps() {
        let rules = PrincipalRules::parse(
            r"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,
              RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,
              RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U,
              RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,
              DEFAULT",
        )
        .unwrap();
        let name = |dn: &str| rules.name_of(dn).unwrap();
        assert_eq!(name("CN=Duke,OU=ServiceUsers,O=Org,C=US"), "Duke");
        assert_eq!(
            name("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US"),
            "duke@sme"
        );
        assert_eq!(name("cn=duke,ou=sme,dc=mycp,dc=com"), "DUKE@SME");
        assert_eq!(
            name("OU=JavaSoft,O=Sun Microsystems,CN=Duke.2,C=US"),
            "duke.2"
        );
        assert_eq!(
            name("OU=JavaSoft,O=Sun Microsystems,C=US"),
            "OU=JavaSoft,O=Sun Microsystems,C=US"
        );
        let escaped = PrincipalRules::parse(r"RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT").unwrap();
        assert_eq!(
            escaped
                .name_of(r"CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz")
                .unwrap(),
            r"Tkac\, Adam"
        );
    }

    #[test]
    fn without_a_matching_rule_there_is_no_principal() {
        let rules = PrincipalRules::parse(r"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/").unwrap();
        assert!(rules.name_of("CN=a,OU=Other").is_err());
        let none = PrincipalRules::parse("").unwrap();
        assert!(none.name_of("CN=a").is_err());
        assert_eq!(PrincipalRules::default().name_of("CN=a").unwrap(), "CN=a");
    }

    #[test]
    fn malformed_rules_are_refused() {
        for text in [
            "default",
            "rule:^CN=(.*)$/$1/",
            "RULE:^CN=(.*?),OU=ServiceUsers.*/$1",
            "RULE:^CN=(.*)$/$1/L/U",
            "RULE:^CN=(.*)$/$1/LU",
            "DEFAULT/L",
            "RULE:^CN=((.*$/$1/",
        ] {
            assert!(PrincipalRules::parse(text).is_err(), "{text}");
        }
    }

    #[test]
    fn java_replacements_translate() {
        assert_eq!(java_replacement("$1@$2", 2), "${1}@${2}");
        assert_eq!(java_replacement(r"\$1 costs $", 1), "$$1 costs $$");
        assert_eq!(java_replacement("$4-$12", 3), "$$4-$$12");
        assert_eq!(java_replacement("${user}", 1), "${user}");
    }

    #[test]
    fn empty_rules_are_skipped_as_kafka_skips_them() {
        let rules = PrincipalRules::parse(", RULE:^CN=(.*)$/$1/,,DEFAULT").unwrap();
        assert_eq!(rules.name_of("CN=a").unwrap(), "a");
        assert_eq!(rules.name_of("O=b").unwrap(), "O=b");
    }
}
