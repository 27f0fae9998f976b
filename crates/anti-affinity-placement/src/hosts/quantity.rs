//! Resource amounts: integers, or Kubernetes quantity strings whose value is
//! a whole number.

use kube_validation::{Quantity, QuantityError};

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

/// A quantity string (`resource.ParseQuantity`, parsed by `kube-validation`)
/// that must come out as a whole, non-negative number.
fn parse_quantity(text: &str) -> Result<u64, AmountProblem> {
    let text = text.trim();
    let quantity = Quantity::parse(text).map_err(|error| match error {
        QuantityError::TooLarge => AmountProblem::TooLarge,
        _ => AmountProblem::Unparsable,
    })?;
    if quantity.is_negative() {
        return Err(AmountProblem::Negative);
    }
    const NANOS_PER_UNIT: i128 = 1_000_000_000;
    if quantity.nanos() % NANOS_PER_UNIT != 0 {
        return Err(if text.ends_with('m') {
            AmountProblem::Milli
        } else {
            AmountProblem::NotInteger
        });
    }
    u64::try_from(quantity.nanos() / NANOS_PER_UNIT).map_err(|_| AmountProblem::TooLarge)
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
        assert_eq!(text("1e3"), Ok(1000));
        assert_eq!(text("0.5Gi"), Ok(1 << 29));
    }

    #[test]
    fn rejected_amounts_say_why() {
        assert_eq!(text("-1"), Err(AmountProblem::Negative));
        assert_eq!(text("1.5"), Err(AmountProblem::NotInteger));
        assert_eq!(text("500m"), Err(AmountProblem::Milli));
        assert_eq!(text("0.5k"), Ok(500));
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
