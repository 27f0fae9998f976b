//! `--max-input-bytes`: a byte count as users write it.

/// A byte count given as `4GiB`, `512Mi`, `100M`, `1000000`: an integer
/// with an optional Kubernetes quantity suffix (`k`, `M`, `G`, `T` decimal;
/// `Ki`, `Mi`, `Gi`, `Ti` binary), optionally followed by `B`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteSize(pub u64);

impl std::str::FromStr for ByteSize {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let trimmed = text.trim();
        let digits = trimmed
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(trimmed.len());
        let (number, suffix) = trimmed.split_at(digits);
        let suffix = suffix.trim_start();
        let suffix = suffix
            .strip_suffix('B')
            .filter(|rest| !rest.is_empty())
            .unwrap_or(suffix);
        let multiplier: u64 = match suffix {
            "" | "B" => 1,
            "k" | "K" => 1_000,
            "M" => 1_000_000,
            "G" => 1_000_000_000,
            "T" => 1_000_000_000_000,
            "Ki" => 1 << 10,
            "Mi" => 1 << 20,
            "Gi" => 1 << 30,
            "Ti" => 1 << 40,
            _ => return Err(byte_size_error(text)),
        };
        number
            .parse::<u64>()
            .ok()
            .and_then(|number| number.checked_mul(multiplier))
            .filter(|bytes| *bytes > 0)
            .map(ByteSize)
            .ok_or_else(|| byte_size_error(text))
    }
}

fn byte_size_error(text: &str) -> String {
    format!(
        "expected a positive number of bytes such as 4GiB, 512Mi, 100M or 1000000, got {text:?}"
    )
}

impl std::fmt::Display for ByteSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes_read_kubernetes_suffixes() {
        let parse = |text: &str| text.parse::<ByteSize>().map(|size| size.0);
        assert_eq!(parse("4GiB"), Ok(4 << 30));
        assert_eq!(parse("4Gi"), Ok(4 << 30));
        assert_eq!(parse("100M"), Ok(100_000_000));
        assert_eq!(parse("1000"), Ok(1000));
        assert_eq!(parse("12B"), Ok(12));
        assert!(parse("0").is_err());
        assert!(parse("-1").is_err());
        assert!(parse("4 apples").is_err());
        assert!(parse("99999999999Ti").is_err());
    }
}
