//! Score normalisation shared by plugins
//! (`pkg/scheduler/framework/plugins/helper/normalize_score.go`).

/// `framework.MaxNodeScore`.
pub const MAX_NODE_SCORE: i64 = 100;

/// `DefaultNormalizeScore(MaxNodeScore, reverse, scores)`: each score
/// becomes `100 × s / max` (integer division), then `100 − that` when
/// `reverse`. When the maximum is 0 the scores stay as they are, or all
/// become 100 when `reverse` (C.5, C.41).
pub fn default_normalize(raw: &[i64], reverse: bool) -> Vec<i64> {
    let max = raw.iter().copied().fold(0, i64::max);
    if max == 0 {
        return if reverse {
            vec![MAX_NODE_SCORE; raw.len()]
        } else {
            raw.to_vec()
        };
    }
    raw.iter()
        .map(|s| {
            let n = MAX_NODE_SCORE * s / max;
            if reverse { MAX_NODE_SCORE - n } else { n }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // TestDefaultNormalizeScore (helper/normalize_score_test.go).
    #[test]
    fn default_normalize_table() {
        let cases: &[(&[i64], bool, &[i64])] = &[
            (&[10, 20, 30, 40, 50], false, &[20, 40, 60, 80, 100]),
            (&[10, 20, 30, 40, 50], true, &[80, 60, 40, 20, 0]),
            (&[1000, 10, 20, 30, 40, 50], false, &[100, 1, 2, 3, 4, 5]),
            (&[1000, 10, 20, 30, 40, 50], true, &[0, 99, 98, 97, 96, 95]),
            (&[0, 1, 1, 1], false, &[0, 100, 100, 100]),
            (&[0, 0, 0, 0], false, &[0, 0, 0, 0]),
            (&[0, 0, 0, 0], true, &[100, 100, 100, 100]),
        ];
        for (raw, reverse, want) in cases {
            assert_eq!(default_normalize(raw, *reverse), *want, "{raw:?} {reverse}");
        }
    }

    #[test]
    fn max_normalisation_uses_integer_division() {
        assert_eq!(default_normalize(&[2, 11, 4], false), vec![18, 100, 36]);
        assert_eq!(default_normalize(&[0, 0], false), vec![0, 0]);
    }
}
