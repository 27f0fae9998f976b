//! Behaviour rules: the identifiers of the headings of `docs/behaviour/`
//! that output cites (`A2.15`, `C.31`).

/// The anchor of a rule's heading: the identifier in lower case with the
/// dot replaced by a dash (`A2.15` → `a2-15`).
pub fn rule_anchor(id: &str) -> String {
    id.to_lowercase().replace('.', "-")
}
