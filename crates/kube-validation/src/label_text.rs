//! The text form of a label selector, as in a `labelSelector=` query or
//! `kubectl -l`: apimachinery's `labels.Parse`
//! (`staging/src/k8s.io/apimachinery/pkg/labels/selector.go`, Kubernetes
//! v1.35.4), with its grammar and its messages.
//!
//! ```text
//! selector    ::= requirement | requirement "," selector
//! requirement ::= [ "!" ] KEY [ set | exact ]
//! set         ::= ( "in" | "notin" ) "(" [ VALUE { "," VALUE } ] ")"
//! exact       ::= ( "=" | "==" | "!=" | ">" | "<" ) [ VALUE ]
//! ```
//!
//! Spaces, tabs, carriage returns and newlines separate tokens; `=`, `!`,
//! `(`, `)`, `,`, `>` and `<` are operators; anything else is part of a key
//! or value. A key alone means `exists`, `!key` `does not exist`; `in` and
//! `notin` are keywords only where an operator is expected (`x in (in)` is
//! valid). `()`, `(a,)` and `x=` list the empty value. Keys must be
//! qualified names and values label values; `>`/`<` values integers. Errors
//! read as apimachinery's: `unable to parse requirement: …` around the
//! requirement's own error, or `found 'x', expected: …` for the syntax.

use std::collections::BTreeSet;

use crate::names::validate_qualified_name;
use crate::requirement::{FieldError, Operator, ParseError, Requirement, go_quote};

/// A lexer token (`labels.Token`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token<'a> {
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier(&'a str),
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

impl<'a> Token<'a> {
    /// The literal apimachinery prints in `found '…'` messages.
    fn literal(self) -> &'a str {
        match self {
            Token::EndOfString => "",
            Token::ClosedPar => ")",
            Token::Comma => ",",
            Token::DoesNotExist => "!",
            Token::DoubleEquals => "==",
            Token::Equals => "=",
            Token::GreaterThan => ">",
            Token::Identifier(text) => text,
            Token::In => "in",
            Token::LessThan => "<",
            Token::NotEquals => "!=",
            Token::NotIn => "notin",
            Token::OpenPar => "(",
        }
    }

    /// `in` and `notin` where a value is expected are identifiers
    /// (`ParserContext` `Values`).
    fn as_value(self) -> Self {
        match self {
            Token::In | Token::NotIn => Token::Identifier(self.literal()),
            other => other,
        }
    }

    fn operator(text: &'a str) -> Option<Self> {
        Some(match text {
            ")" => Token::ClosedPar,
            "," => Token::Comma,
            "!" => Token::DoesNotExist,
            "==" => Token::DoubleEquals,
            "=" => Token::Equals,
            ">" => Token::GreaterThan,
            "in" => Token::In,
            "<" => Token::LessThan,
            "!=" => Token::NotEquals,
            "notin" => Token::NotIn,
            "(" => Token::OpenPar,
            _ => return None,
        })
    }
}

fn is_whitespace(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(byte: u8) -> bool {
    matches!(byte, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Splits the text into tokens (`labels.Lexer`), ending with
/// [`Token::EndOfString`]. Works on bytes, as Go does: every byte that ends
/// a token is ASCII, so the slices are valid UTF-8. A NUL byte reads as the
/// end of the text where a token starts, as Go's lexer reads it.
fn scan(text: &str) -> Vec<Token<'_>> {
    let bytes = text.as_bytes();
    let mut pos = 0;
    let mut tokens = Vec::new();
    loop {
        while pos < bytes.len() && is_whitespace(bytes[pos]) {
            pos += 1;
        }
        if pos >= bytes.len() || bytes[pos] == 0 {
            tokens.push(Token::EndOfString);
            return tokens;
        }
        let start = pos;
        if is_special(bytes[pos]) {
            // The longest run of operator bytes that is still an operator:
            // `!=`, `==`, else one byte.
            let mut end = pos + 1;
            while end < bytes.len()
                && is_special(bytes[end])
                && Token::operator(&text[start..=end]).is_some()
            {
                end += 1;
            }
            pos = end;
            // Every single operator byte is a token.
            tokens.push(Token::operator(&text[start..end]).unwrap_or(Token::EndOfString));
        } else {
            while pos < bytes.len()
                && bytes[pos] != 0
                && !is_special(bytes[pos])
                && !is_whitespace(bytes[pos])
            {
                pos += 1;
            }
            let word = &text[start..pos];
            tokens.push(Token::operator(word).unwrap_or(Token::Identifier(word)));
        }
        // Go's lexer consumes a NUL that ends a token: the next token starts
        // after it.
        if pos < bytes.len() && bytes[pos] == 0 {
            pos += 1;
        }
    }
}

/// `labels.Parse`: the requirements of a label selector's text form, in
/// the order written (apimachinery sorts them by key, which changes nothing
/// about what they match). Empty text (or only spaces) selects everything:
/// no requirement.
///
/// ```
/// use std::collections::BTreeMap;
/// use kube_validation::parse_label_selector;
///
/// let requirements = parse_label_selector("tier in (web, db), !canary, cores>4").unwrap();
/// let labels = BTreeMap::from([
///     ("tier".to_owned(), "db".to_owned()),
///     ("cores".to_owned(), "8".to_owned()),
/// ]);
/// assert!(requirements.iter().all(|r| r.matches(&labels)));
/// assert_eq!(
///     parse_label_selector("a b").unwrap_err().to_string(),
///     "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"
/// );
/// ```
pub fn parse_label_selector(text: &str) -> Result<Vec<Requirement>, ParseError> {
    Parser {
        tokens: scan(text),
        position: 0,
    }
    .parse()
    .map_err(|message| ParseError::new(vec![FieldError::plain(message)]))
}

/// `labels.Parser` over the scanned tokens; errors are the message
/// apimachinery's `fmt.Errorf` builds.
struct Parser<'a> {
    tokens: Vec<Token<'a>>,
    position: usize,
}

impl<'a> Parser<'a> {
    /// The current token, in the values context (the only one the parser
    /// looks ahead in).
    fn lookahead(&self) -> Token<'a> {
        self.tokens[self.position].as_value()
    }

    fn consume(&mut self) -> Token<'a> {
        let token = self.tokens[self.position];
        // The last token is the end of the text, which is never consumed
        // past.
        self.position = (self.position + 1).min(self.tokens.len() - 1);
        token
    }

    fn consume_value(&mut self) -> Token<'a> {
        self.consume().as_value()
    }

    fn parse(mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        loop {
            match self.lookahead() {
                Token::Identifier(_) | Token::DoesNotExist => {
                    let requirement = self
                        .requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(requirement);
                    match self.consume_value() {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let next = self.lookahead();
                            if !matches!(next, Token::Identifier(_) | Token::DoesNotExist) {
                                return Err(format!(
                                    "found '{}', expected: identifier after ','",
                                    next.literal()
                                ));
                            }
                        }
                        other => {
                            return Err(format!(
                                "found '{}', expected: ',' or 'end of string'",
                                other.literal()
                            ));
                        }
                    }
                }
                Token::EndOfString => return Ok(requirements),
                other => {
                    return Err(format!(
                        "found '{}', expected: !, identifier, or 'end of string'",
                        other.literal()
                    ));
                }
            }
        }
    }

    /// `parseRequirement`: key and operator, then the values.
    fn requirement(&mut self) -> Result<Requirement, String> {
        let mut negated = false;
        let mut token = self.consume_value();
        if token == Token::DoesNotExist {
            negated = true;
            token = self.consume_value();
        }
        let Token::Identifier(key) = token else {
            return Err(format!("found '{}', expected: identifier", token.literal()));
        };
        let key_errors = validate_qualified_name(key);
        if !key_errors.is_empty() {
            // Checked with the parser's path, which is nil: Go prints `<nil>`.
            return Err(format!(
                "<nil>: Invalid value: {}: {}",
                go_quote(key),
                key_errors.join("; ")
            ));
        }
        let next = self.lookahead();
        if negated || matches!(next, Token::EndOfString | Token::Comma) {
            let operator = if negated {
                Operator::DoesNotExist
            } else {
                Operator::Exists
            };
            return Requirement::new("", key, operator, Some(&[])).map_err(|e| e.to_string());
        }
        let operator = match self.consume() {
            Token::In => Operator::In,
            Token::Equals | Token::DoubleEquals => Operator::Equals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            other => {
                return Err(format!(
                    "found '{}', expected: in, notin, =, ==, !=, gt, lt",
                    other.literal()
                ));
            }
        };
        let values = match operator {
            Operator::In | Operator::NotIn => self.set()?,
            _ => self.exact_value()?,
        };
        // `sets.String.List()`: sorted, without duplicates.
        let values: Vec<String> = values.into_iter().map(str::to_owned).collect();
        Requirement::new("", key, operator, Some(&values)).map_err(|e| e.to_string())
    }

    /// `parseValues`: `(` values `)`.
    fn set(&mut self) -> Result<BTreeSet<&'a str>, String> {
        let open = self.consume_value();
        if open != Token::OpenPar {
            return Err(format!("found '{}' expected: '('", open.literal()));
        }
        match self.lookahead() {
            first @ (Token::Identifier(_) | Token::Comma) => {
                let values = self.identifiers()?;
                if self.consume_value() != Token::ClosedPar {
                    // apimachinery names the list's first token here, not
                    // the one it found (the list only ends before a `)`, so
                    // this does not happen).
                    return Err(format!("found '{}', expected: ')'", first.literal()));
                }
                Ok(values)
            }
            Token::ClosedPar => {
                self.consume_value();
                Ok(BTreeSet::from([""]))
            }
            other => Err(format!(
                "found '{}', expected: ',', ')' or identifier",
                other.literal()
            )),
        }
    }

    /// `parseIdentifiersList`: comma-separated, possibly empty values.
    fn identifiers(&mut self) -> Result<BTreeSet<&'a str>, String> {
        let mut values = BTreeSet::new();
        loop {
            match self.consume_value() {
                Token::Identifier(value) => {
                    values.insert(value);
                    match self.lookahead() {
                        Token::Comma => {}
                        Token::ClosedPar => return Ok(values),
                        other => {
                            return Err(format!(
                                "found '{}', expected: ',' or ')'",
                                other.literal()
                            ));
                        }
                    }
                }
                Token::Comma => {
                    if values.is_empty() {
                        values.insert("");
                    }
                    match self.lookahead() {
                        Token::ClosedPar => {
                            values.insert("");
                            return Ok(values);
                        }
                        Token::Comma => {
                            values.insert("");
                        }
                        _ => {}
                    }
                }
                other => {
                    return Err(format!(
                        "found '{}', expected: ',', or identifier",
                        other.literal()
                    ));
                }
            }
        }
    }

    /// `parseExactValue`: one value, empty at a `,` or the end.
    fn exact_value(&mut self) -> Result<BTreeSet<&'a str>, String> {
        if matches!(self.lookahead(), Token::EndOfString | Token::Comma) {
            return Ok(BTreeSet::from([""]));
        }
        match self.consume_value() {
            Token::Identifier(value) => Ok(BTreeSet::from([value])),
            other => Err(format!("found '{}', expected: identifier", other.literal())),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn selects(text: &str, pairs: &[(&str, &str)]) -> bool {
        let labels = labels(pairs);
        parse_label_selector(text)
            .unwrap_or_else(|e| panic!("{text:?}: {e}"))
            .iter()
            .all(|r| r.matches(&labels))
    }

    fn error(text: &str) -> String {
        parse_label_selector(text)
            .map(|r| format!("parsed {text:?} into {r:?}"))
            .unwrap_or_else(|e| e.to_string())
    }

    const VALUE_RULE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    #[test]
    fn every_operator_selects_as_apimachinery() {
        let web = [("app", "web"), ("cores", "8")];
        assert!(parse_label_selector("").unwrap().is_empty());
        assert!(parse_label_selector(" \t\r\n").unwrap().is_empty());
        for (text, on_web, on_none) in [
            ("app=web", true, false),
            ("app==web", true, false),
            ("app!=web", false, true),
            ("app != db", true, true),
            ("app in (web, db)", true, false),
            ("app notin (web,db)", false, true),
            ("app", true, false),
            ("!app", false, true),
            ("cores>4", true, false),
            ("cores<4", false, false),
            ("cores > 8", false, false),
            ("app=web,cores in (8)", true, false),
            ("app\tin\n(web)", true, false),
        ] {
            assert_eq!(selects(text, &web), on_web, "{text} on app=web,cores=8");
            assert_eq!(selects(text, &[]), on_none, "{text} on no labels");
        }
    }

    /// `labels.Parse`'s own example, `x in (foo,,baz),y,z notin ()`: empty
    /// values are values, `()` is the empty value, and `in`/`notin` are
    /// values where a value is expected.
    #[test]
    fn empty_values_and_keywords_as_values() {
        let text = "x in (foo,,baz),y,z notin ()";
        assert!(selects(text, &[("x", ""), ("y", "1")]));
        assert!(selects(text, &[("x", "baz"), ("y", ""), ("z", "a")]));
        assert!(!selects(text, &[("x", "baz"), ("y", ""), ("z", "")]));
        assert!(!selects(text, &[("x", "bar"), ("y", "")]));
        assert!(selects("x in (,a)", &[("x", "")]));
        assert!(selects("x notin (a,)", &[("x", "b")]));
        assert!(!selects("x notin (a,)", &[("x", "")]));
        assert!(selects("x in ()", &[("x", "")]));
        assert!(!selects("x in ()", &[]));
        assert!(selects("x=", &[("x", "")]));
        assert!(selects("x=,y", &[("x", ""), ("y", "1")]));
        assert!(selects("x in (in, notin)", &[("x", "notin")]));
        assert!(selects("x=in", &[("x", "in")]));
        assert!(selects("in", &[("in", "")]));
        assert!(selects("notin notin (in)", &[("notin", "x")]));
    }

    #[test]
    fn syntax_errors_are_apimachinery_texts() {
        for (text, message) in [
            (
                "a b",
                "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt",
            ),
            (
                "x (",
                "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt",
            ),
            (
                "x!",
                "unable to parse requirement: found '!', expected: in, notin, =, ==, !=, gt, lt",
            ),
            ("x=a,", "found '', expected: identifier after ','"),
            ("x=a,,y", "found ',', expected: identifier after ','"),
            (
                ",x",
                "found ',', expected: !, identifier, or 'end of string'",
            ),
            (
                "=x",
                "found '=', expected: !, identifier, or 'end of string'",
            ),
            ("x=a=b", "found '=', expected: ',' or 'end of string'"),
            ("!x=a", "found '=', expected: ',' or 'end of string'"),
            ("x in (a))", "found ')', expected: ',' or 'end of string'"),
            (
                "!",
                "unable to parse requirement: found '', expected: identifier",
            ),
            (
                "!!x",
                "unable to parse requirement: found '!', expected: identifier",
            ),
            (
                "x in a",
                "unable to parse requirement: found 'a' expected: '('",
            ),
            (
                "x in (a",
                "unable to parse requirement: found '', expected: ',' or ')'",
            ),
            (
                "x in (a b)",
                "unable to parse requirement: found 'b', expected: ',' or ')'",
            ),
            (
                "x in (=)",
                "unable to parse requirement: found '=', expected: ',', ')' or identifier",
            ),
            (
                "x in (a,=)",
                "unable to parse requirement: found '=', expected: ',', or identifier",
            ),
            (
                "x=(",
                "unable to parse requirement: found '(', expected: identifier",
            ),
        ] {
            assert_eq!(error(text), message, "{text:?}");
        }
    }

    /// Keys are checked by the parser with its nil field path (Go prints
    /// `<nil>`), values and counts by `NewRequirement` with theirs.
    #[test]
    fn invalid_keys_and_values_are_apimachinery_texts() {
        assert_eq!(
            error("-x=a"),
            "unable to parse requirement: <nil>: Invalid value: \"-x\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        );
        assert!(error("Example.com/x").starts_with(
            "unable to parse requirement: <nil>: Invalid value: \"Example.com/x\": prefix part "
        ));
        assert_eq!(
            error("x = -a"),
            format!(
                "unable to parse requirement: values[0][x]: Invalid value: \"-a\": {VALUE_RULE}"
            )
        );
        // Set values are sorted before they are checked, as `sets.String`
        // lists them.
        assert_eq!(
            error("x in (b, -a)"),
            format!(
                "unable to parse requirement: values[0][x]: Invalid value: \"-a\": {VALUE_RULE}"
            )
        );
        assert_eq!(
            error("x>a"),
            "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
        assert_eq!(
            error("x<"),
            "unable to parse requirement: values[0]: Invalid value: \"\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
    }

    /// Go's lexer reads a NUL byte as the end of the text where a token
    /// starts (after spaces), and skips one right after a token.
    #[test]
    fn a_nul_byte_ends_or_separates_as_in_go() {
        assert!(selects("x=a,y\0,z", &[("x", "a"), ("y", ""), ("z", "")]));
        assert!(!selects("x=a,y\0,z", &[("x", "a"), ("y", "")]));
        assert_eq!(
            error("x=a, \0y"),
            "found '', expected: identifier after ','"
        );
        assert!(selects("x=a,\0y", &[("x", "a"), ("y", "")]));
        assert!(!selects("x=a,\0y", &[("x", "a")]));
        assert!(selects("x=\0a", &[("x", "a")]));
    }

    /// Keys and values are bytes to the lexer: anything but the operator
    /// bytes and spaces, then checked as label syntax.
    #[test]
    fn multi_byte_text_is_kept_whole_and_checked() {
        assert!(error("zone=\u{e9}t\u{e9}").starts_with(
            "unable to parse requirement: values[0][zone]: Invalid value: \"\u{e9}t\u{e9}\""
        ));
    }
}
