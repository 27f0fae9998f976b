//! The value of the `velero.io/repo-name` label (documented on
//! [`repository_name_label`]).

/// The most characters a label value may have (a DNS-1035 label's length).
const MAX_LABEL_LENGTH: usize = 63;

/// The value Velero gives the `velero.io/repo-name` label of a repository's
/// maintenance jobs (R5.12): the repository's name when it has at most 63
/// bytes, else the SHA3-224 digest of the name in lower-case hex (56
/// characters).
pub fn repository_name_label(name: &str) -> String {
    if name.len() <= MAX_LABEL_LENGTH {
        name.to_owned()
    } else {
        sha3_224(name.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

/// SHA3-224 (FIPS 202): Keccak-f[1600] with rate 144 bytes and the
/// SHA-3 domain padding `0x06 … 0x80`.
pub(crate) fn sha3_224(input: &[u8]) -> [u8; 28] {
    const RATE: usize = 144;
    let mut state = [0u64; 25];
    let mut padded = input.to_vec();
    padded.push(0x06);
    while !padded.len().is_multiple_of(RATE) {
        padded.push(0);
    }
    if let Some(last) = padded.last_mut() {
        *last |= 0x80;
    }
    for block in padded.chunks(RATE) {
        for (lane, bytes) in state.iter_mut().zip(block.chunks(8)) {
            let mut word = [0u8; 8];
            word.copy_from_slice(bytes);
            *lane ^= u64::from_le_bytes(word);
        }
        keccak_f(&mut state);
    }
    let mut out = [0u8; 28];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = state[i / 8].to_le_bytes()[i % 8];
    }
    out
}

const ROUND_CONSTANTS: [u64; 24] = [
    0x0000_0000_0000_0001,
    0x0000_0000_0000_8082,
    0x8000_0000_0000_808a,
    0x8000_0000_8000_8000,
    0x0000_0000_0000_808b,
    0x0000_0000_8000_0001,
    0x8000_0000_8000_8081,
    0x8000_0000_0000_8009,
    0x0000_0000_0000_008a,
    0x0000_0000_0000_0088,
    0x0000_0000_8000_8009,
    0x0000_0000_8000_000a,
    0x0000_0000_8000_808b,
    0x8000_0000_0000_008b,
    0x8000_0000_0000_8089,
    0x8000_0000_0000_8003,
    0x8000_0000_0000_8002,
    0x8000_0000_0000_0080,
    0x0000_0000_0000_800a,
    0x8000_0000_8000_000a,
    0x8000_0000_8000_8081,
    0x8000_0000_0000_8080,
    0x0000_0000_8000_0001,
    0x8000_0000_8000_8008,
];

/// Rotation offsets, indexed by `x + 5 * y`.
const ROTATIONS: [u32; 25] = [
    0, 1, 62, 28, 27, 36, 44, 6, 55, 20, 3, 10, 43, 25, 39, 41, 45, 15, 21, 8, 18, 2, 61, 56, 14,
];

fn keccak_f(a: &mut [u64; 25]) {
    for rc in ROUND_CONSTANTS {
        // θ
        let mut c = [0u64; 5];
        for x in 0..5 {
            c[x] = a[x] ^ a[x + 5] ^ a[x + 10] ^ a[x + 15] ^ a[x + 20];
        }
        for x in 0..5 {
            let d = c[(x + 4) % 5] ^ c[(x + 1) % 5].rotate_left(1);
            for y in 0..5 {
                a[x + 5 * y] ^= d;
            }
        }
        // ρ and π
        let mut b = [0u64; 25];
        for x in 0..5 {
            for y in 0..5 {
                b[y + 5 * ((2 * x + 3 * y) % 5)] = a[x + 5 * y].rotate_left(ROTATIONS[x + 5 * y]);
            }
        }
        // χ
        for x in 0..5 {
            for y in 0..5 {
                a[x + 5 * y] = b[x + 5 * y] ^ (!b[(x + 1) % 5 + 5 * y] & b[(x + 2) % 5 + 5 * y]);
            }
        }
        // ι
        a[0] ^= rc;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(input: &[u8]) -> String {
        sha3_224(input).iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn sha3_224_matches_fips_202_vectors() {
        assert_eq!(
            hex(b""),
            "6b4e03423667dbb73b6e15454f0eb1abd4597f9a1b078e3f5b5a6bc7"
        );
        assert_eq!(
            hex(b"abc"),
            "e642824c3f8cf24ad09234ee7d3c766fc9a3a5168d0c94ad73b46fdf"
        );
    }

    #[test]
    fn short_names_are_kept_and_long_ones_hashed() {
        assert_eq!(repository_name_label("test-123"), "test-123");
        let exact = "a".repeat(63);
        assert_eq!(repository_name_label(&exact), exact);
        // Velero's own test name says "longer than 63" but has 53 bytes:
        // it is kept as is.
        let named = "label with more than 63 characters should be modified";
        assert_eq!(repository_name_label(named), named);
        // Two blocks of input (200 bytes > the 144-byte rate).
        assert_eq!(
            repository_name_label(&"x".repeat(200)),
            "abc93b8bf26dd0d48b74004f33f4c184d94322938a5c6b15469b1aac"
        );
    }
}
