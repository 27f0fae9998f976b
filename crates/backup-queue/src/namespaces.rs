//! Namespace patterns: Velero's validation (Q4.7) and a matcher compiled
//! once per backup (Q4.6–Q4.9), built on `globset`.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use globset::{GlobBuilder, GlobMatcher};

use crate::input::NamespaceFilter;

/// Which list of the Backup spec a pattern came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FilterField {
    /// `spec.includedNamespaces`.
    Included,
    /// `spec.excludedNamespaces`.
    Excluded,
}

impl fmt::Display for FilterField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Included => "spec.includedNamespaces",
            Self::Excluded => "spec.excludedNamespaces",
        })
    }
}

/// What is wrong with a namespace pattern.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PatternProblem {
    /// One of `| ( ) ! { } ,` (Velero rejects them, Q4.7).
    #[error("contains '{0}', which Velero does not allow; use only '*', '?' and '[...]'")]
    ForbiddenCharacter(char),
    /// `**` (Velero rejects it, Q4.7).
    #[error("contains '**'; a single '*' already matches any namespace name")]
    DoubleStar,
    /// A `[` without its `]` (Q4.7).
    #[error("has a '[' that is never closed; add the matching ']'")]
    UnclosedBracket,
    /// `[]` (Q4.7).
    #[error("has an empty character class '[]'; list at least one character")]
    EmptyBracket,
    /// A `]` without an opening `[` (Q4.7).
    #[error("has a ']' without a matching '['")]
    StrayBracket,
    /// A `[` inside a character class. Stricter than Velero: the two glob
    /// libraries disagree on its meaning.
    #[error("has a '[' inside a character class; remove it")]
    NestedBracket,
    /// A class starting with `^`. Stricter than Velero: `globset` reads it
    /// as a negation, Velero's glob library as a literal `^`.
    #[error(
        "has a character class starting with '^', whose meaning differs between glob libraries; negated classes are not supported"
    )]
    CaretClass,
    /// `globset` could not compile the pattern.
    #[error("is not a valid glob: {0}")]
    Glob(String),
}

/// An invalid namespace pattern, naming the field, the index and the
/// offending value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}[{index}]: namespace pattern {pattern:?} {problem}")]
pub struct PatternError {
    /// The list the pattern is in.
    pub field: FilterField,
    /// Its index in that list.
    pub index: usize,
    /// The pattern as written.
    pub pattern: String,
    /// What is wrong with it.
    pub problem: PatternProblem,
}

/// Checks one pattern the way Velero does before expanding wildcards
/// (Q4.7), plus the two stricter checks documented on [`PatternProblem`].
pub fn validate_pattern(pattern: &str) -> Result<(), PatternProblem> {
    if let Some(c) = pattern
        .chars()
        .find(|c| matches!(c, '|' | '(' | ')' | '!' | '{' | '}' | ','))
    {
        return Err(PatternProblem::ForbiddenCharacter(c));
    }
    if pattern.contains("**") {
        return Err(PatternProblem::DoubleStar);
    }
    let mut class: Option<usize> = None; // characters seen inside the open class
    for c in pattern.chars() {
        match (c, class) {
            ('[', None) => class = Some(0),
            ('[', Some(_)) => return Err(PatternProblem::NestedBracket),
            (']', None) => return Err(PatternProblem::StrayBracket),
            (']', Some(0)) => return Err(PatternProblem::EmptyBracket),
            (']', Some(_)) => class = None,
            ('^', Some(0)) => return Err(PatternProblem::CaretClass),
            (_, Some(n)) => class = Some(n + 1),
            (_, None) => {}
        }
    }
    if class.is_some() {
        return Err(PatternProblem::UnclosedBracket);
    }
    Ok(())
}

/// True if the pattern is matched by glob rather than by equality.
pub(crate) fn is_wildcard(pattern: &str) -> bool {
    pattern.contains(['*', '?', '[', '\\'])
}

fn build_glob(pattern: &str) -> Result<globset::Glob, PatternProblem> {
    GlobBuilder::new(pattern)
        .literal_separator(false)
        .backslash_escape(true)
        .empty_alternates(false)
        .build()
        .map_err(|e| PatternProblem::Glob(e.kind().to_string()))
}

/// Compiled wildcards shared between backups: compiling a glob builds a
/// regular expression, which costs far more than matching it.
#[derive(Debug, Clone, Default)]
pub struct PatternCache {
    globs: HashMap<String, Arc<GlobMatcher>>,
}

impl PatternCache {
    /// Forgets every compiled pattern (bounds memory after churn).
    pub fn clear(&mut self) {
        self.globs.clear();
    }

    /// Number of distinct compiled wildcards held.
    pub fn len(&self) -> usize {
        self.globs.len()
    }

    /// True if nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.globs.is_empty()
    }

    fn glob(&mut self, pattern: &str) -> Result<Arc<GlobMatcher>, PatternProblem> {
        if let Some(m) = self.globs.get(pattern) {
            return Ok(m.clone());
        }
        let m = Arc::new(build_glob(pattern)?.compile_matcher());
        self.globs.insert(pattern.to_owned(), m.clone());
        Ok(m)
    }
}

/// One validated pattern. Simple shapes are matched without a regular
/// expression; `globset` (same semantics) handles the rest.
#[derive(Debug, Clone)]
pub(crate) enum Pattern {
    /// No wildcard: equality.
    Literal(Box<str>),
    /// `abc*`.
    Prefix(Box<str>),
    /// `*abc`.
    Suffix(Box<str>),
    /// Anything else, compiled by `globset`.
    Glob(Arc<GlobMatcher>),
}

impl Pattern {
    fn compile(pattern: &str, cache: &mut PatternCache) -> Result<Self, PatternProblem> {
        validate_pattern(pattern)?;
        if !is_wildcard(pattern) {
            return Ok(Self::Literal(pattern.into()));
        }
        if let Some(prefix) = pattern.strip_suffix('*')
            && !is_wildcard(prefix)
        {
            return Ok(Self::Prefix(prefix.into()));
        }
        if let Some(suffix) = pattern.strip_prefix('*')
            && !is_wildcard(suffix)
        {
            return Ok(Self::Suffix(suffix.into()));
        }
        cache.glob(pattern).map(Self::Glob)
    }

    pub(crate) fn is_match(&self, namespace: &str) -> bool {
        match self {
            Self::Literal(l) => **l == *namespace,
            Self::Prefix(p) => namespace.starts_with(&**p),
            Self::Suffix(s) => namespace.ends_with(&**s),
            Self::Glob(g) => g.is_match(namespace),
        }
    }
}

/// One compiled include wildcard.
#[derive(Debug, Clone)]
pub(crate) struct IncludeGlob {
    /// The pattern as written.
    pub(crate) pattern: String,
    /// The literal characters before the first wildcard (narrows the
    /// candidate namespaces to a sorted range).
    pub(crate) prefix: String,
    pub(crate) matcher: Pattern,
}

/// The shape of a backup's namespace set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// Every namespace, present and future.
    All,
    /// Every namespace except the excluded ones.
    AllExcept,
    /// The listed literals and include wildcards, minus the excluded ones.
    Listed,
}

/// A backup's namespace filter, validated and compiled once.
///
/// A namespace is in the backup's set iff it is matched by an include (an
/// empty include list or `*` matches everything) and by no exclude (Q4.8).
#[derive(Debug, Clone)]
pub struct NamespaceMatcher {
    shape: Shape,
    /// Sorted, de-duplicated literal includes (Q4.6).
    literals: Vec<String>,
    globs: Vec<IncludeGlob>,
    excludes: Vec<Pattern>,
}

impl NamespaceMatcher {
    /// Validates and compiles a filter. The first invalid pattern (includes
    /// first, in list order) is reported.
    pub fn compile(filter: &NamespaceFilter) -> Result<Self, PatternError> {
        Self::compile_cached(filter, &mut PatternCache::default())
    }

    /// Like [`NamespaceMatcher::compile`], reusing wildcards that `cache`
    /// already compiled (many backups share the same wildcards).
    pub fn compile_cached(
        filter: &NamespaceFilter,
        cache: &mut PatternCache,
    ) -> Result<Self, PatternError> {
        let mut compile_list = |field, list: &[String]| -> Result<Vec<Pattern>, PatternError> {
            list.iter()
                .enumerate()
                .map(|(index, pattern)| {
                    Pattern::compile(pattern, cache).map_err(|problem| PatternError {
                        field,
                        index,
                        pattern: pattern.clone(),
                        problem,
                    })
                })
                .collect()
        };
        let includes = compile_list(FilterField::Included, &filter.included)?;
        let excludes = compile_list(FilterField::Excluded, &filter.excluded)?;

        let include_all = filter.included.is_empty() || filter.included.iter().any(|p| p == "*");
        let shape = match (include_all, excludes.is_empty()) {
            (true, true) => Shape::All,
            (true, false) => Shape::AllExcept,
            (false, _) => Shape::Listed,
        };
        let mut literals = Vec::new();
        let mut globs = Vec::new();
        if shape == Shape::Listed {
            for (p, matcher) in filter.included.iter().zip(includes) {
                match matcher {
                    Pattern::Literal(_) => {
                        if !p.is_empty() {
                            literals.push(p.clone());
                        }
                    }
                    matcher => {
                        let prefix: String =
                            p.chars().take_while(|c| !"*?[\\".contains(*c)).collect();
                        globs.push(IncludeGlob {
                            pattern: p.clone(),
                            prefix,
                            matcher,
                        });
                    }
                }
            }
            literals.sort();
            literals.dedup();
            globs.sort_by(|a, b| a.pattern.cmp(&b.pattern));
            globs.dedup_by(|a, b| a.pattern == b.pattern);
        }
        Ok(Self {
            shape,
            literals,
            globs,
            excludes,
        })
    }

    /// True if `namespace` is in the backup's set.
    pub fn is_match(&self, namespace: &str) -> bool {
        if self.is_excluded(namespace) {
            return false;
        }
        match self.shape {
            Shape::All | Shape::AllExcept => true,
            Shape::Listed => {
                self.literals
                    .binary_search_by(|l| l.as_str().cmp(namespace))
                    .is_ok()
                    || self.globs.iter().any(|g| g.matcher.is_match(namespace))
            }
        }
    }

    /// True if an exclude pattern matches `namespace`.
    pub(crate) fn is_excluded(&self, namespace: &str) -> bool {
        self.excludes.iter().any(|p| p.is_match(namespace))
    }

    /// True if the filter covers every namespace, present and future, with
    /// no exclusions (empty includes or `*`).
    pub fn covers_everything(&self) -> bool {
        self.shape == Shape::All
    }

    /// The literal (non-wildcard, non-empty) includes, sorted.
    pub fn literals(&self) -> &[String] {
        &self.literals
    }

    pub(crate) fn shape(&self) -> Shape {
        self.shape
    }

    pub(crate) fn globs(&self) -> &[IncludeGlob] {
        &self.globs
    }

    /// The namespaces of `namespaces` in the set, in the given order (Q4.8).
    pub fn resolve<'a, I>(&self, namespaces: I) -> Vec<&'a str>
    where
        I: IntoIterator<Item = &'a str>,
    {
        namespaces
            .into_iter()
            .filter(|n| self.is_match(n))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(inc: &[&str], exc: &[&str]) -> NamespaceFilter {
        NamespaceFilter::including(inc.iter().copied()).excluding(exc.iter().copied())
    }

    #[test]
    fn velero_rejected_patterns_are_rejected() {
        for (p, problem) in [
            ("a|b", PatternProblem::ForbiddenCharacter('|')),
            ("(a)", PatternProblem::ForbiddenCharacter('(')),
            ("a)", PatternProblem::ForbiddenCharacter(')')),
            ("!a", PatternProblem::ForbiddenCharacter('!')),
            ("ns{a,b}", PatternProblem::ForbiddenCharacter('{')),
            ("a}", PatternProblem::ForbiddenCharacter('}')),
            ("a,b", PatternProblem::ForbiddenCharacter(',')),
            ("a**", PatternProblem::DoubleStar),
            ("**", PatternProblem::DoubleStar),
            ("ns[ab", PatternProblem::UnclosedBracket),
            ("ns[]", PatternProblem::EmptyBracket),
            ("ns]", PatternProblem::StrayBracket),
            ("ns[a]]", PatternProblem::StrayBracket),
            ("ns[[a]", PatternProblem::NestedBracket),
            ("ns[^a]", PatternProblem::CaretClass),
        ] {
            assert_eq!(validate_pattern(p), Err(problem), "{p}");
        }
        for p in ["*", "ns-*", "ns?", "ns[a-c]*", "[a]", "kube-system", ""] {
            assert_eq!(validate_pattern(p), Ok(()), "{p}");
        }
    }

    #[test]
    fn error_names_field_index_and_pattern() {
        let err =
            NamespaceMatcher::compile(&filter(&["ok", "app-*"], &["x", "bad**"])).unwrap_err();
        assert_eq!(err.field, FilterField::Excluded);
        assert_eq!(err.index, 1);
        assert_eq!(err.pattern, "bad**");
        insta::assert_snapshot!(err.to_string(), @r#"spec.excludedNamespaces[1]: namespace pattern "bad**" contains '**'; a single '*' already matches any namespace name"#);
    }

    #[test]
    fn empty_includes_and_star_cover_everything() {
        assert!(
            NamespaceMatcher::compile(&filter(&[], &[]))
                .unwrap()
                .covers_everything()
        );
        assert!(
            NamespaceMatcher::compile(&filter(&["a", "*"], &[]))
                .unwrap()
                .covers_everything()
        );
        let m = NamespaceMatcher::compile(&filter(&["*"], &["kube-*"])).unwrap();
        assert!(!m.covers_everything());
        assert!(m.is_match("default"));
        assert!(!m.is_match("kube-system"));
    }

    #[test]
    fn resolution_follows_cluster_order_and_excludes() {
        let m =
            NamespaceMatcher::compile(&filter(&["app-*", "db", "missing"], &["app-test"])).unwrap();
        let cluster = ["db", "app-test", "app-prod", "web", "app-dev"];
        assert_eq!(m.resolve(cluster), vec!["db", "app-prod", "app-dev"]);
    }

    #[test]
    fn empty_string_include_matches_nothing() {
        let m = NamespaceMatcher::compile(&filter(&[""], &[])).unwrap();
        assert!(m.resolve(["a", "b"]).is_empty());
        assert!(m.literals().is_empty());
    }

    #[test]
    fn fast_paths_match_exactly_like_globset() {
        let names = [
            "",
            "a",
            "ab",
            "ba",
            "app-a",
            "app-",
            "-a",
            "x*y",
            "a*",
            "kube-system",
        ];
        let patterns = [
            "*", "a*", "*a", "app-*", "*-a", "a?", "[ab]*", "*a*", "\\*", "a\\*", "ab",
        ];
        let mut cache = PatternCache::default();
        for p in patterns {
            let ours = Pattern::compile(p, &mut cache).unwrap();
            let theirs = globset::Glob::new(p).unwrap().compile_matcher();
            for n in names {
                assert_eq!(
                    ours.is_match(n),
                    theirs.is_match(n),
                    "pattern {p:?} on {n:?}"
                );
            }
        }
        assert!(matches!(
            Pattern::compile("app-*", &mut cache),
            Ok(Pattern::Prefix(_))
        ));
        assert!(matches!(
            Pattern::compile("*-a", &mut cache),
            Ok(Pattern::Suffix(_))
        ));
        assert!(matches!(
            Pattern::compile("a?", &mut cache),
            Ok(Pattern::Glob(_))
        ));
    }
}
