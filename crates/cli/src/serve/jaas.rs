//! The JAAS configuration Kafka takes in `sasl.jaas.config` values: a login module class, a
//! control flag, options `key=value` (values bare or quoted, in double or single quotes, with
//! backslash escapes), and a `;`, with `//` and `/* */` comments, as in
//!
//! ```text
//! org.apache.kafka.common.security.plain.PlainLoginModule required
//!     username="admin" password="admin-secret" user_alice="alice-secret";
//! ```
//!
//! A broker takes exactly one module per listener and mechanism, as Kafka does.

use std::collections::BTreeMap;

/// One login module and its options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginModule {
    pub class: String,
    pub options: BTreeMap<String, String>,
}

const FLAGS: [&str; 4] = ["required", "requisite", "sufficient", "optional"];

#[derive(Debug, PartialEq, Eq)]
enum Token {
    Word(String),
    Quoted(String),
    Equals,
    End,
}

fn tokens(text: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            '=' => {
                chars.next();
                tokens.push(Token::Equals);
            }
            ';' => {
                chars.next();
                tokens.push(Token::End);
            }
            '/' if matches!(text_after(&chars), Some('/' | '*')) => {
                chars.next();
                if chars.next() == Some('/') {
                    // To the end of the line.
                    for c in chars.by_ref() {
                        if c == '\n' {
                            break;
                        }
                    }
                } else {
                    let mut previous = ' ';
                    loop {
                        match chars.next() {
                            None => return Err("a /* comment is not closed".into()),
                            Some('/') if previous == '*' => break,
                            Some(c) => previous = c,
                        }
                    }
                }
            }
            quote @ ('"' | '\'') => {
                chars.next();
                let mut value = String::new();
                loop {
                    match chars.next() {
                        None => return Err("a quoted value is not closed".into()),
                        Some(c) if c == quote => break,
                        Some('\\') => match chars.next() {
                            Some('n') => value.push('\n'),
                            Some('t') => value.push('\t'),
                            Some('r') => value.push('\r'),
                            Some(other) => value.push(other),
                            None => return Err("a quoted value is not closed".into()),
                        },
                        Some(other) => value.push(other),
                    }
                }
                tokens.push(Token::Quoted(value));
            }
            _ => {
                let mut word = String::new();
                while let Some(&c) = chars.peek() {
                    if c.is_whitespace() || matches!(c, '=' | ';' | '"' | '\'') {
                        break;
                    }
                    word.push(c);
                    chars.next();
                }
                tokens.push(Token::Word(word));
            }
        }
    }
    Ok(tokens)
}

/// The character after the next one, without consuming either.
fn text_after(chars: &std::iter::Peekable<std::str::Chars<'_>>) -> Option<char> {
    let mut ahead = chars.clone();
    ahead.next();
    ahead.next()
}

/// The one login module `text` configures, or why it does not parse.
pub fn parse(text: &str) -> Result<LoginModule, String> {
    let tokens = tokens(text)?;
    let mut modules = Vec::new();
    let mut rest = &tokens[..];
    while !rest.is_empty() {
        let (module, after) = module(rest)?;
        modules.push(module);
        rest = after;
    }
    match modules.len() {
        0 => Err("JAAS config property does not contain any login modules".into()),
        1 => Ok(modules.remove(0)),
        count => Err(format!(
            "JAAS config property contains {count} login modules, should be 1 module"
        )),
    }
}

fn module(tokens: &[Token]) -> Result<(LoginModule, &[Token]), String> {
    let [Token::Word(class), Token::Word(flag), rest @ ..] = tokens else {
        return Err("expected a login module class and a control flag (required, requisite, sufficient or optional)".into());
    };
    if !FLAGS.iter().any(|known| known.eq_ignore_ascii_case(flag)) {
        return Err(format!(
            "{flag:?} is not a login module control flag (required, requisite, sufficient or optional)"
        ));
    }
    let mut options = BTreeMap::new();
    let mut rest = rest;
    loop {
        match rest {
            [Token::End, after @ ..] => {
                let module = LoginModule {
                    class: class.clone(),
                    options,
                };
                return Ok((module, after));
            }
            [
                Token::Word(key),
                Token::Equals,
                Token::Word(value) | Token::Quoted(value),
                after @ ..,
            ] => {
                options.insert(key.clone(), value.clone());
                rest = after;
            }
            [] => return Err("the login module does not end with ';'".into()),
            _ => return Err("expected options as key=value or key=\"value\"".into()),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn kafkas_plain_example_parses() {
        let module = parse(
            r#"org.apache.kafka.common.security.plain.PlainLoginModule required
                username="admin" password="admin-secret"
                user_admin="admin-secret" user_alice=alice-secret // a comment
                /* another */ user_bob='bob "secret"' user_odd="a \"quoted\" \\ one;";"#,
        )
        .unwrap();
        assert_eq!(
            module.class,
            "org.apache.kafka.common.security.plain.PlainLoginModule"
        );
        assert_eq!(module.options["user_alice"], "alice-secret");
        assert_eq!(module.options["user_odd"], r#"a "quoted" \ one;"#);
        assert_eq!(module.options["user_bob"], r#"bob "secret""#);
        assert_eq!(module.options.len(), 6);
    }

    #[test]
    fn broken_configurations_say_what_is_wrong() {
        for (text, reason) in [
            ("", "does not contain any"),
            (
                "a.Module required; b.Module required;",
                "contains 2 login modules",
            ),
            ("a.Module maybe;", "control flag"),
            ("a.Module required user=\"x\"", "does not end"),
            ("a.Module required user=\"x;", "not closed"),
            ("a.Module required user;", "key=value"),
            ("a.Module;", "control flag"),
            ("a.Module required /* open", "not closed"),
        ] {
            let error = parse(text).unwrap_err();
            assert!(error.contains(reason), "{text:?}: {error}");
        }
    }
}
