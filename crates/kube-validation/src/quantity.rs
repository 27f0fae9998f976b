//! A small parser for Kubernetes resource quantities
//! (`resource.ParseQuantity`): `<sign><digits>[.<digits>]<suffix>` with
//! binary suffixes `Ki Mi Gi Ti Pi Ei`, decimal suffixes `n u m "" k M G T P
//! E` and decimal exponents `e<int>` / `E<int>`.
//!
//! Values are kept exactly, in nano-units (Kubernetes' smallest scale;
//! finer fractions round up like `ParseQuantity`), as an `i128`. Quantities
//! beyond about 1.7·10²⁹ are rejected as too large (Kubernetes accepts them;
//! no pod resource is that big).

use std::fmt;

/// A parsed quantity, in units of 10⁻⁹.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Quantity {
    nanos: i128,
}

/// Why a string is not a quantity.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QuantityError {
    /// Not of the form `<number><suffix>` (apimachinery's `ErrFormatWrong`).
    #[error(
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )]
    Format,
    /// The suffix is not one Kubernetes knows (`ErrSuffix`).
    #[error("unable to parse quantity's suffix")]
    Suffix,
    /// Too large to represent exactly here.
    #[error("quantity too large")]
    TooLarge,
}

impl Quantity {
    /// Zero.
    pub const ZERO: Self = Self { nanos: 0 };

    /// The value in nano-units (`1` = `1n`, `1_000_000_000` = `1`).
    pub fn nanos(self) -> i128 {
        self.nanos
    }

    /// Whether the quantity is zero (Velero's "unbounded", C1.14).
    pub fn is_zero(self) -> bool {
        self.nanos == 0
    }

    /// Whether the quantity is negative.
    pub fn is_negative(self) -> bool {
        self.nanos < 0
    }

    /// A quantity of `nanos` nano-units (`from_nanos(1_000_000)` is `1m`).
    pub fn from_nanos(nanos: i128) -> Self {
        Self { nanos }
    }

    /// The sum, or `None` when it does not fit.
    pub fn checked_add(self, other: Self) -> Option<Self> {
        self.nanos.checked_add(other.nanos).map(Self::from_nanos)
    }

    /// apimachinery's `Quantity.Value()`: the value in whole units, rounded
    /// up (`1500m` is 2, `-1500m` is -1), saturated to the `i64` range.
    pub fn value(self) -> i64 {
        ceil_div_saturating(self.nanos, 1_000_000_000)
    }

    /// apimachinery's `Quantity.MilliValue()`: the value in thousandths,
    /// rounded up (`0.1m` is 1), saturated to the `i64` range. kube-scheduler
    /// counts CPU this way.
    pub fn milli_value(self) -> i64 {
        ceil_div_saturating(self.nanos, 1_000_000)
    }

    /// Parses a quantity string.
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        let bytes = text.as_bytes();
        let mut i = 0;
        let negative = match bytes.first() {
            Some(b'-') => {
                i = 1;
                true
            }
            Some(b'+') => {
                i = 1;
                false
            }
            _ => false,
        };
        let int_start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        let int_digits = &text[int_start..i];
        let mut frac_digits = "";
        if i < bytes.len() && bytes[i] == b'.' {
            i += 1;
            let frac_start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            frac_digits = &text[frac_start..i];
        }
        if int_digits.is_empty() && frac_digits.is_empty() {
            return Err(QuantityError::Format);
        }
        let (base, exponent) = parse_suffix(&text[i..])?;
        // value = 0.[int][frac] digits * 10^len(int) ... computed as
        // mantissa * 10^(exp10 - len(frac)) * base^exponent, then in nanos.
        let mut mantissa: i128 = 0;
        let digits = int_digits.bytes().chain(frac_digits.bytes());
        let scale: i64 = -(frac_digits.len() as i64);
        for d in digits {
            mantissa = mantissa
                .checked_mul(10)
                .and_then(|m| m.checked_add(i128::from(d - b'0')))
                .ok_or(QuantityError::TooLarge)?;
        }
        let mut power10 = scale + 9; // into nanos
        let mut value = mantissa;
        if base == 2 {
            for _ in 0..exponent {
                value = value.checked_mul(2).ok_or(QuantityError::TooLarge)?;
            }
        } else {
            power10 += exponent;
        }
        if power10 >= 0 {
            for _ in 0..power10 {
                if value == 0 {
                    break;
                }
                value = value.checked_mul(10).ok_or(QuantityError::TooLarge)?;
            }
        } else {
            // Round up (away from zero for the magnitude) to whole nanos.
            let mut remainder = false;
            for _ in 0..(-power10).min(60) {
                remainder |= value % 10 != 0;
                value /= 10;
            }
            if (-power10) > 60 {
                remainder |= value != 0;
                value = 0;
            }
            if remainder {
                value += 1;
            }
        }
        Ok(Self {
            nanos: if negative { -value } else { value },
        })
    }
}

/// `ceil(n / d)` for a positive `d`, saturated to `i64`.
fn ceil_div_saturating(n: i128, d: i128) -> i64 {
    let q = n.div_euclid(d) + i128::from(n.rem_euclid(d) != 0);
    i64::try_from(q).unwrap_or(if q < 0 { i64::MIN } else { i64::MAX })
}

/// Returns (base, exponent): base 10 or 2.
fn parse_suffix(suffix: &str) -> Result<(u8, i64), QuantityError> {
    Ok(match suffix {
        "" => (10, 0),
        "n" => (10, -9),
        "u" => (10, -6),
        "m" => (10, -3),
        "k" => (10, 3),
        "M" => (10, 6),
        "G" => (10, 9),
        "T" => (10, 12),
        "P" => (10, 15),
        "E" => (10, 18),
        "Ki" => (2, 10),
        "Mi" => (2, 20),
        "Gi" => (2, 30),
        "Ti" => (2, 40),
        "Pi" => (2, 50),
        "Ei" => (2, 60),
        _ => {
            let rest = suffix
                .strip_prefix('e')
                .or_else(|| suffix.strip_prefix('E'))
                .ok_or_else(|| classify(suffix))?;
            let digits = rest.strip_prefix(['+', '-']).unwrap_or(rest);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(classify(suffix));
            }
            let exponent: i64 = rest.parse().map_err(|_| QuantityError::TooLarge)?;
            if exponent.unsigned_abs() > 60 {
                // 10^60 nanos overflows; tiny exponents round to 1n or 0.
                if exponent > 0 {
                    return Err(QuantityError::TooLarge);
                }
                return Ok((10, -61));
            }
            (10, exponent)
        }
    })
}

fn classify(suffix: &str) -> QuantityError {
    if suffix
        .bytes()
        .all(|b| b"eEinumkKMGTP+-0123456789".contains(&b))
    {
        QuantityError::Suffix
    } else {
        QuantityError::Format
    }
}

impl fmt::Display for Quantity {
    /// Renders the value in plain decimal (`1.5`, `0.000000001`, `1073741824`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.nanos < 0 { "-" } else { "" };
        let magnitude = self.nanos.unsigned_abs();
        let whole = magnitude / 1_000_000_000;
        let frac = magnitude % 1_000_000_000;
        if frac == 0 {
            write!(f, "{sign}{whole}")
        } else {
            let frac = format!("{frac:09}");
            write!(f, "{sign}{whole}.{}", frac.trim_end_matches('0'))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nanos(text: &str) -> i128 {
        Quantity::parse(text).unwrap().nanos()
    }

    #[test]
    fn decimal_suffixes() {
        assert_eq!(nanos("1"), 1_000_000_000);
        assert_eq!(nanos("100m"), 100_000_000);
        assert_eq!(nanos("1.5"), 1_500_000_000);
        assert_eq!(nanos("2k"), 2_000_000_000_000);
        assert_eq!(nanos("1M"), 1_000_000_000_000_000);
        assert_eq!(nanos("3n"), 3);
        assert_eq!(nanos("7u"), 7_000);
        assert_eq!(nanos("1E"), 1_000_000_000_000_000_000_000_000_000);
        assert_eq!(nanos(".5"), 500_000_000);
        assert_eq!(nanos("5."), 5_000_000_000);
        assert_eq!(nanos("+5"), 5_000_000_000);
        assert_eq!(nanos("-5m"), -5_000_000);
    }

    #[test]
    fn binary_suffixes() {
        assert_eq!(nanos("1Ki"), 1024 * 1_000_000_000);
        assert_eq!(nanos("1Gi"), nanos("1073741824"));
        assert_eq!(nanos("0.5Mi"), 524_288 * 1_000_000_000);
        assert_eq!(nanos("1Ei"), (1i128 << 60) * 1_000_000_000);
    }

    #[test]
    fn decimal_exponents() {
        assert_eq!(nanos("1e3"), nanos("1k"));
        assert_eq!(nanos("1E3"), nanos("1k"));
        assert_eq!(nanos("12e-3"), nanos("12m"));
        assert_eq!(nanos("1e+2"), nanos("100"));
    }

    #[test]
    fn fractions_below_a_nano_round_up() {
        assert_eq!(nanos("0.1n"), 1);
        assert_eq!(nanos("1e-12"), 1);
        assert_eq!(nanos("1e-100"), 1);
        assert_eq!(nanos("0e-100"), 0);
    }

    #[test]
    fn malformed_quantities_are_rejected() {
        for bad in [
            "", "abc", "1 Gi", "1gi", "1Gib", "1KI", "--1", "1e", "1e+", ".", "Mi", "1.2.3",
        ] {
            assert!(Quantity::parse(bad).is_err(), "{bad:?} must not parse");
        }
        assert_eq!(Quantity::parse("1e999"), Err(QuantityError::TooLarge));
        assert_eq!(Quantity::parse("1Q"), Err(QuantityError::Format));
        assert_eq!(Quantity::parse("1K"), Err(QuantityError::Suffix));
    }

    #[test]
    fn extreme_exponents_do_not_overflow() {
        assert_eq!(nanos("1e-9223372036854775808"), 1);
        assert_eq!(
            Quantity::parse("1e9223372036854775807"),
            Err(QuantityError::TooLarge)
        );
        assert_eq!(
            Quantity::parse("1e99999999999999999999"),
            Err(QuantityError::TooLarge)
        );
    }

    proptest::proptest! {
        #[test]
        fn parsing_never_panics(text in "[-+0-9.eEinumkKMGTP]{0,30}") {
            let _ = Quantity::parse(&text);
        }

        #[test]
        fn integers_with_decimal_suffixes_scale_exactly(n in 0i64..1_000_000, suffix in 0usize..5) {
            let (name, factor) = [("", 1_000_000_000i128), ("k", 1_000_000_000_000), ("m", 1_000_000), ("Ki", 1_024_000_000_000), ("Mi", 1_048_576_000_000_000)][suffix];
            prop_assert_eq_helper(Quantity::parse(&format!("{n}{name}")).map(Quantity::nanos), Ok(i128::from(n) * factor))?;
        }
    }

    fn prop_assert_eq_helper(
        got: Result<i128, QuantityError>,
        want: Result<i128, QuantityError>,
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        proptest::prop_assert_eq!(got, want);
        Ok(())
    }

    #[test]
    fn value_and_milli_value_round_up_like_apimachinery() {
        let q = |t: &str| Quantity::parse(t).unwrap();
        assert_eq!(q("1500m").value(), 2);
        assert_eq!(q("1500m").milli_value(), 1500);
        assert_eq!(q("-1500m").value(), -1);
        assert_eq!(q("0.1m").milli_value(), 1);
        assert_eq!(q("1n").value(), 1);
        assert_eq!(q("1Gi").value(), 1 << 30);
        assert_eq!(q("4").milli_value(), 4000);
        assert_eq!(q("0").value(), 0);
        assert_eq!(q("1E").milli_value(), i64::MAX);
        assert_eq!(
            q("100m").checked_add(q("1.9")).map(Quantity::milli_value),
            Some(2000)
        );
        assert_eq!(Quantity::from_nanos(1_000_000).to_string(), "0.001");
    }

    #[test]
    fn display_is_plain_decimal() {
        assert_eq!(Quantity::parse("1500m").unwrap().to_string(), "1.5");
        assert_eq!(Quantity::parse("1Ki").unwrap().to_string(), "1024");
        assert_eq!(Quantity::parse("-1n").unwrap().to_string(), "-0.000000001");
    }
}
