//! Resource amounts: integers or quantity strings with an integer mantissa.

use super::inventory::Amount;

/// Why an amount is not a non-negative integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AmountProblem {
    Negative,
    NotInteger,
    Milli,
    Unparsable,
    TooLarge,
}

impl AmountProblem {
    pub(crate) fn explain(self) -> &'static str {
        match self {
            AmountProblem::Negative => "must not be negative",
            AmountProblem::NotInteger => "must be a whole number (integer amounts only)",
            AmountProblem::Milli => {
                "milli-units (\"m\") are not supported: use whole units, e.g. cpu: 4"
            }
            AmountProblem::Unparsable => {
                "must be an integer or a quantity like \"128Gi\", \"4k\" (suffixes k M G T P E Ki Mi Gi Ti Pi Ei)"
            }
            AmountProblem::TooLarge => "is too large (at most 2^64-1)",
        }
    }
}

/// The amount as a non-negative integer.
pub(crate) fn amount_value(amount: &Amount) -> Result<u64, AmountProblem> {
    match amount {
        Amount::Integer(n) if *n < 0 => Err(AmountProblem::Negative),
        Amount::Integer(n) => u64::try_from(*n).map_err(|_| AmountProblem::TooLarge),
        Amount::Fraction(x) if *x < 0.0 => Err(AmountProblem::Negative),
        Amount::Fraction(_) => Err(AmountProblem::NotInteger),
        Amount::Text(s) => parse_quantity(s),
    }
}

const SUFFIXES: [(&str, u64); 12] = [
    ("Ki", 1 << 10),
    ("Mi", 1 << 20),
    ("Gi", 1 << 30),
    ("Ti", 1 << 40),
    ("Pi", 1 << 50),
    ("Ei", 1 << 60),
    ("k", 1_000),
    ("M", 1_000_000),
    ("G", 1_000_000_000),
    ("T", 1_000_000_000_000),
    ("P", 1_000_000_000_000_000),
    ("E", 1_000_000_000_000_000_000),
];

fn parse_quantity(text: &str) -> Result<u64, AmountProblem> {
    let text = text.trim();
    if text.starts_with('-') {
        return Err(AmountProblem::Negative);
    }
    let text = text.strip_prefix('+').unwrap_or(text);
    let digits_end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, suffix) = text.split_at(digits_end);
    if digits.is_empty() {
        return Err(AmountProblem::Unparsable);
    }
    if suffix.starts_with('.') {
        return Err(AmountProblem::NotInteger);
    }
    if suffix == "m" {
        return Err(AmountProblem::Milli);
    }
    let multiplier = if suffix.is_empty() {
        1
    } else {
        SUFFIXES
            .iter()
            .find(|(name, _)| *name == suffix)
            .map(|(_, m)| *m)
            .ok_or(AmountProblem::Unparsable)?
    };
    let mantissa: u64 = digits.parse().map_err(|_| AmountProblem::TooLarge)?;
    mantissa
        .checked_mul(multiplier)
        .ok_or(AmountProblem::TooLarge)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Result<u64, AmountProblem> {
        amount_value(&Amount::Text(s.to_owned()))
    }

    #[test]
    fn quantities_with_binary_and_decimal_suffixes() {
        assert_eq!(text("128Gi"), Ok(128 << 30));
        assert_eq!(text("4k"), Ok(4000));
        assert_eq!(text(" 32 "), Ok(32));
        assert_eq!(text("+7"), Ok(7));
        assert_eq!(text("2Ei"), Ok(2 << 60));
    }

    #[test]
    fn rejected_amounts_say_why() {
        assert_eq!(text("-1"), Err(AmountProblem::Negative));
        assert_eq!(text("1.5"), Err(AmountProblem::NotInteger));
        assert_eq!(text("500m"), Err(AmountProblem::Milli));
        assert_eq!(text("4x"), Err(AmountProblem::Unparsable));
        assert_eq!(text("Gi"), Err(AmountProblem::Unparsable));
        assert_eq!(text("16Ei"), Err(AmountProblem::TooLarge));
        assert_eq!(
            amount_value(&Amount::Integer(-3)),
            Err(AmountProblem::Negative)
        );
        assert_eq!(
            amount_value(&Amount::Fraction(0.5)),
            Err(AmountProblem::NotInteger)
        );
        assert_eq!(amount_value(&Amount::Integer(5)), Ok(5));
    }
}
