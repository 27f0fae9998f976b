//! The crate's error type.

/// Why manifests could not be generated.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A flag value that would make the generated manifests invalid.
    #[error("invalid {flag} {value:?}: {problem}")]
    InvalidInput {
        /// The flag, e.g. `--namespace`.
        flag: &'static str,
        /// The value given.
        value: String,
        /// What is wrong with it.
        problem: String,
    },
    /// Manifests could not be serialised.
    #[error("cannot render manifests as YAML: {0}")]
    Yaml(String),
}
