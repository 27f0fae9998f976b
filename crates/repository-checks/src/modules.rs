//! Module cycles within a crate.
//!
//! The rule: **no cycle among the sibling modules of any module**. A module
//! `m` that names a module `x` (through a `use` of a `crate::`, `super::` or
//! `self::` path, or such a path written anywhere in its code) depends on
//! `x`; when `m` and `x` are neither the same module nor one inside the
//! other, the dependency is counted between the two modules just below their
//! closest common ancestor, so `a::b` naming `c::d` makes `a` depend on
//! `c`. A module naming its ancestors or its descendants is not a
//! dependency between siblings (a parent declares its children, and a child
//! sees its parent's items): only `a -> b -> a` between siblings is a cycle.
//!
//! The scan reads what a module tree is made of: the crate root
//! (`src/lib.rs`, `src/main.rs`, `src/bin/*.rs`), the `mod x;` declarations
//! it follows to `x.rs` or `x/mod.rs`, and inline `mod x { … }` blocks.
//! `#[cfg(test)]` modules are left out (tests may reach anywhere), and so
//! are comments, doc comments and literals. A path is resolved to the
//! longest module it names: `crate::a::b::Item` names `a::b` if `a::b` is a
//! module, else `a`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

/// A module's path from the crate root, as its segments (`[]` is the root).
type ModPath = Vec<String>;

fn display_path(path: &[String]) -> String {
    if path.is_empty() {
        "crate".to_owned()
    } else {
        path.join("::")
    }
}

/// Where one module names another: the file and line of the first such
/// place, the path as written, and how many other places there are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    /// The sibling module that depends (full path from the crate root).
    pub from: String,
    /// The sibling module it depends on.
    pub to: String,
    /// The file of the first reference, as given to [`cycles_in`].
    pub file: String,
    /// Its 1-based line.
    pub line: usize,
    /// The path as written there (`crate::writes::plan`).
    pub written: String,
    /// How many more references make the same dependency.
    pub more: usize,
}

/// A cycle among sibling modules of one crate: `edges[i].to` is
/// `edges[i + 1].from`, and the last edge returns to the first module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cycle {
    /// The crate's name.
    pub krate: String,
    /// The dependencies that close the cycle.
    pub edges: Vec<Edge>,
    /// Every module of the group that depends on each other (the cycle is
    /// one way through it), sorted.
    pub group: Vec<String>,
}

impl Cycle {
    /// The modules of the cycle, the first repeated at the end:
    /// `["a", "b", "a"]`.
    pub fn modules(&self) -> Vec<&str> {
        let mut out: Vec<&str> = self.edges.iter().map(|e| e.from.as_str()).collect();
        if let Some(first) = self.edges.first() {
            out.push(first.from.as_str());
        }
        out
    }
}

impl fmt::Display for Cycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.krate, self.modules().join(" -> "))?;
        if self.group.len() > self.edges.len() {
            write!(
                f,
                " (all of {} depend on each other)",
                self.group.join(", ")
            )?;
        }
        for e in &self.edges {
            write!(
                f,
                "\n    {} -> {}: {}:{} `{}`",
                e.from, e.to, e.file, e.line, e.written
            )?;
            if e.more > 0 {
                write!(f, " (and {} more)", e.more)?;
            }
        }
        Ok(())
    }
}

/// The Rust sources under a crate's `src/` directory, keyed by their path
/// relative to it with `/` separators (`a/mod.rs`).
pub fn read_sources(src: &Path) -> std::io::Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![String::new()];
    while let Some(rel) = stack.pop() {
        for entry in std::fs::read_dir(src.join(&rel))? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let child = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            if entry.file_type()?.is_dir() {
                stack.push(child);
            } else if name.ends_with(".rs") {
                out.insert(child, std::fs::read_to_string(entry.path())?);
            }
        }
    }
    Ok(out)
}

/// The module cycles of the crate `krate` whose `src/` files are `sources`
/// (see [`read_sources`]); `shown` is prefixed to the file names in the
/// findings (`bins/policyctl/src/`). Each group of mutually dependent
/// siblings is reported once, as one cycle through it.
pub fn cycles_in(krate: &str, shown: &str, sources: &BTreeMap<String, String>) -> Vec<Cycle> {
    let mut roots: Vec<&str> = ["lib.rs", "main.rs"]
        .into_iter()
        .filter(|r| sources.contains_key(*r))
        .collect();
    roots.extend(
        sources
            .keys()
            .filter(|k| k.starts_with("bin/") && k.matches('/').count() == 1)
            .map(String::as_str),
    );
    let mut out = Vec::new();
    for root in roots {
        let tree = Tree::read(root, sources);
        out.extend(tree.cycles(krate, shown));
    }
    out
}

/// A reference from one module to a path, where it is written.
struct Reference {
    module: ModPath,
    file: String,
    line: usize,
    path: Vec<String>,
}

struct Tree {
    modules: BTreeSet<ModPath>,
    references: Vec<Reference>,
}

impl Tree {
    fn read(root: &str, sources: &BTreeMap<String, String>) -> Tree {
        let mut tree = Tree {
            modules: BTreeSet::from([Vec::new()]),
            references: Vec::new(),
        };
        // (file, its module path, the directory its children's files are in)
        let mut pending = vec![(root.to_owned(), ModPath::new(), dir_of(root).to_owned())];
        while let Some((file, module, child_dir)) = pending.pop() {
            let Some(text) = sources.get(&file) else {
                continue;
            };
            let scan = scan_file(&lex(text), &module);
            for (declared, within) in scan.declared {
                // `mod x;` inside an inline `mod i { … }` looks in `i/`.
                let mut dir = child_dir.clone();
                for inline in &within[module.len()..] {
                    dir = join(&dir, inline);
                }
                let name = declared.last().cloned().unwrap_or_default();
                let flat = join(&dir, &format!("{name}.rs"));
                let nested = join(&dir, &format!("{name}/mod.rs"));
                let (child_file, grandchildren) = if sources.contains_key(&flat) {
                    (flat, join(&dir, &name))
                } else {
                    (nested, join(&dir, &name))
                };
                tree.modules.insert(declared.clone());
                pending.push((child_file, declared, grandchildren));
            }
            tree.modules.extend(scan.inline);
            tree.references
                .extend(
                    scan.references
                        .into_iter()
                        .map(|(module, line, path)| Reference {
                            module,
                            file: file.clone(),
                            line,
                            path,
                        }),
                );
        }
        tree
    }

    /// The module a path written in `from` names, if any.
    fn resolve(&self, from: &[String], path: &[String]) -> Option<ModPath> {
        let mut segments = path.iter();
        let mut current: ModPath = match segments.next()?.as_str() {
            "crate" => Vec::new(),
            "self" => from.to_vec(),
            "super" => from.get(..from.len().checked_sub(1)?)?.to_vec(),
            _ => return None,
        };
        for segment in segments {
            if segment == "super" {
                current.pop()?;
                continue;
            }
            current.push(segment.clone());
            if !self.modules.contains(&current) {
                current.pop();
                break;
            }
        }
        Some(current)
    }

    fn cycles(&self, krate: &str, shown: &str) -> Vec<Cycle> {
        // parent -> (from child, to child) -> the references making it.
        let mut graphs: BTreeMap<ModPath, BTreeMap<(String, String), Vec<&Reference>>> =
            BTreeMap::new();
        for reference in &self.references {
            let Some(target) = self.resolve(&reference.module, &reference.path) else {
                continue;
            };
            let from = &reference.module;
            let common = from.iter().zip(&target).take_while(|(a, b)| a == b).count();
            // One inside the other (or the same): not between siblings.
            if common == from.len() || common == target.len() {
                continue;
            }
            graphs
                .entry(from[..common].to_vec())
                .or_default()
                .entry((from[common].clone(), target[common].clone()))
                .or_default()
                .push(reference);
        }
        let mut out = Vec::new();
        for (parent, edges) in &graphs {
            let graph: BTreeMap<&str, BTreeSet<&str>> =
                edges.keys().fold(BTreeMap::new(), |mut g, (a, b)| {
                    g.entry(a.as_str()).or_default().insert(b.as_str());
                    g
                });
            for (cycle, group) in one_cycle_per_component(&graph) {
                let full = |name: &str| {
                    let mut p = parent.clone();
                    p.push(name.to_owned());
                    display_path(&p)
                };
                let edges = cycle
                    .iter()
                    .zip(cycle.iter().cycle().skip(1))
                    .map(|(a, b)| {
                        let refs = &edges[&((*a).to_owned(), (*b).to_owned())];
                        let first = refs
                            .iter()
                            .min_by_key(|r| (&r.file, r.line))
                            .unwrap_or_else(|| unreachable!("an edge has a reference"));
                        Edge {
                            from: full(a),
                            to: full(b),
                            file: format!("{shown}{}", first.file),
                            line: first.line,
                            written: first.path.join("::"),
                            more: refs.len() - 1,
                        }
                    })
                    .collect();
                out.push(Cycle {
                    krate: krate.to_owned(),
                    edges,
                    group: group.into_iter().map(full).collect(),
                });
            }
        }
        out
    }
}

fn dir_of(file: &str) -> &str {
    file.rsplit_once('/').map_or("", |(dir, _)| dir)
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

/// For each strongly connected component of more than one node, one cycle
/// through its smallest node (the shortest one, found breadth first), and
/// the component's nodes.
#[allow(clippy::type_complexity)]
fn one_cycle_per_component<'a>(
    graph: &BTreeMap<&'a str, BTreeSet<&'a str>>,
) -> Vec<(Vec<&'a str>, Vec<&'a str>)> {
    let reach = |start: &'a str| -> BTreeMap<&'a str, &'a str> {
        // node -> the node it was first reached from
        let mut seen = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        while let Some(n) = queue.pop_front() {
            for &m in graph.get(n).into_iter().flatten() {
                if let std::collections::btree_map::Entry::Vacant(v) = seen.entry(m) {
                    v.insert(n);
                    queue.push_back(m);
                }
            }
        }
        seen
    };
    let mut done: BTreeSet<&str> = BTreeSet::new();
    let mut out = Vec::new();
    for &start in graph.keys() {
        if done.contains(start) {
            continue;
        }
        let from_start = reach(start);
        if !from_start.contains_key(start) {
            continue;
        }
        // The component: nodes reachable from `start` that reach it back.
        let group: Vec<&str> = from_start
            .keys()
            .copied()
            .filter(|&n| reach(n).contains_key(start))
            .collect();
        done.extend(&group);
        let mut cycle = vec![start];
        let mut n = from_start[start];
        while n != start {
            cycle.push(n);
            n = from_start[n];
        }
        // Walked backwards along the breadth-first tree.
        cycle[1..].reverse();
        out.push((cycle, group));
    }
    out
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    PathSep,
    Punct(char),
}

/// The tokens of Rust source that matter here, with their 1-based lines:
/// identifiers, `::` and single punctuation. Comments, string, byte and
/// character literals, lifetimes and numbers are dropped.
fn lex(text: &str) -> Vec<(Tok, usize)> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let newlines = |from: usize, to: usize| chars[from..to].iter().filter(|c| **c == '\n').count();
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let start = i;
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            line += newlines(start, i);
        } else if let Some(end) = raw_string_end(&chars, i) {
            line += newlines(i, end);
            i = end;
        } else if c == '"' || (c == 'b' && next == Some('"')) {
            let start = i;
            i += if c == 'b' { 2 } else { 1 };
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            line += newlines(start, i.min(chars.len()));
        } else if c == '\'' || (c == 'b' && next == Some('\'')) {
            let q = if c == 'b' { i + 1 } else { i };
            // A character literal (`'a'`, `'\n'`, `'\u{1F600}'`), else a
            // lifetime or label (`'a`).
            if chars.get(q + 1) == Some(&'\\') {
                i = q + 3;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if chars.get(q + 2) == Some(&'\'') {
                i = q + 3;
            } else {
                i = q + 1;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
            }
        } else if c.is_alphabetic() || c == '_' {
            // A raw identifier (`r#type`) is the identifier.
            if c == 'r' && next == Some('#') {
                i += 2;
            }
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            out.push((Tok::Ident(word), line));
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
        } else if c == ':' && next == Some(':') {
            out.push((Tok::PathSep, line));
            i += 2;
        } else {
            out.push((Tok::Punct(c), line));
            i += 1;
        }
    }
    out
}

/// If a raw string (`r"…"`, `r#"…"#`, `br"…"`) starts at `i`, the index
/// just past it.
fn raw_string_end(chars: &[char], i: usize) -> Option<usize> {
    // Not the tail of an identifier (`for"` cannot happen, `br` can).
    if i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_') {
        return None;
    }
    let mut j = i;
    if chars.get(j) == Some(&'b') {
        j += 1;
    }
    if chars.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let hashes = chars[j..].iter().take_while(|c| **c == '#').count();
    j += hashes;
    if chars.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < chars.len() {
        if chars[j] == '"'
            && chars[j + 1..]
                .iter()
                .take(hashes)
                .filter(|c| **c == '#')
                .count()
                == hashes
        {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(chars.len())
}

#[derive(Default)]
struct FileScan {
    /// `mod x;` declarations: the declared module and the (inline) module
    /// the declaration is in.
    declared: Vec<(ModPath, ModPath)>,
    /// Inline `mod x { … }` modules.
    inline: Vec<ModPath>,
    /// (module, line, path as written) of every `crate::`, `self::` and
    /// `super::` path.
    references: Vec<(ModPath, usize, Vec<String>)>,
}

fn ident(t: Option<&(Tok, usize)>) -> Option<&str> {
    match t {
        Some((Tok::Ident(s), _)) => Some(s),
        _ => None,
    }
}

fn scan_file(toks: &[(Tok, usize)], module: &[String]) -> FileScan {
    enum Block {
        Plain,
        Module,
    }
    let mut scan = FileScan::default();
    let mut current: ModPath = module.to_vec();
    let mut blocks: Vec<Block> = Vec::new();
    let mut test_attribute = false;
    let mut i = 0;
    while i < toks.len() {
        match &toks[i].0 {
            Tok::Punct('#') => {
                // An attribute: remember `#[cfg(test)]` for the next item.
                let mut j = i + 1;
                if toks.get(j).map(|t| &t.0) == Some(&Tok::Punct('!')) {
                    j += 1;
                }
                if toks.get(j).map(|t| &t.0) == Some(&Tok::Punct('[')) {
                    let end = matching(toks, j, '[', ']');
                    let inner: Vec<&Tok> = toks[j + 1..end].iter().map(|t| &t.0).collect();
                    if inner
                        == [
                            &Tok::Ident("cfg".into()),
                            &Tok::Punct('('),
                            &Tok::Ident("test".into()),
                            &Tok::Punct(')'),
                        ]
                    {
                        test_attribute = true;
                    }
                    i = end + 1;
                    continue;
                }
                i += 1;
            }
            Tok::Ident(word) if word == "mod" => {
                let Some(name) = ident(toks.get(i + 1)) else {
                    i += 1;
                    continue;
                };
                let mut path = current.clone();
                path.push(name.to_owned());
                match toks.get(i + 2).map(|t| &t.0) {
                    Some(Tok::Punct(';')) => {
                        if !test_attribute {
                            scan.declared.push((path, current.clone()));
                        }
                        i += 3;
                    }
                    Some(Tok::Punct('{')) if test_attribute => {
                        i = matching(toks, i + 2, '{', '}') + 1;
                    }
                    Some(Tok::Punct('{')) => {
                        scan.inline.push(path.clone());
                        current = path;
                        blocks.push(Block::Module);
                        i += 3;
                    }
                    _ => i += 2,
                }
                test_attribute = false;
            }
            Tok::Ident(word) if word == "pub" => {
                // Visibility keeps a pending `#[cfg(test)]` for its item.
                i += 1;
                if toks.get(i).map(|t| &t.0) == Some(&Tok::Punct('(')) {
                    i = matching(toks, i, '(', ')') + 1;
                }
            }
            Tok::Ident(word)
                if word == "use" && toks.get(i + 1).map(|t| &t.0) != Some(&Tok::Punct('<')) =>
            {
                let end = toks[i..]
                    .iter()
                    .position(|t| t.0 == Tok::Punct(';'))
                    .map_or(toks.len(), |p| i + p);
                let mut paths = Vec::new();
                use_tree(&toks[i + 1..end], &mut Vec::new(), &mut paths);
                for (line, path) in paths {
                    if matches!(path[0].as_str(), "crate" | "self" | "super") {
                        scan.references.push((current.clone(), line, path));
                    }
                }
                test_attribute = false;
                i = end + 1;
            }
            Tok::Ident(word)
                if matches!(word.as_str(), "crate" | "self" | "super")
                    && toks.get(i + 1).map(|t| &t.0) == Some(&Tok::PathSep)
                    && !(i > 0 && toks[i - 1].0 == Tok::Punct('$'))
                    && !(i > 0 && toks[i - 1].0 == Tok::PathSep) =>
            {
                let line = toks[i].1;
                let mut path = vec![word.clone()];
                let mut j = i + 1;
                while toks.get(j).map(|t| &t.0) == Some(&Tok::PathSep) {
                    match ident(toks.get(j + 1)) {
                        Some(next) => path.push(next.to_owned()),
                        None => break,
                    }
                    j += 2;
                }
                scan.references.push((current.clone(), line, path));
                i = j;
            }
            Tok::Punct('{') => {
                blocks.push(Block::Plain);
                test_attribute = false;
                i += 1;
            }
            Tok::Punct('}') => {
                if let Some(Block::Module) = blocks.pop() {
                    current.pop();
                }
                i += 1;
            }
            Tok::Punct(';') => {
                test_attribute = false;
                i += 1;
            }
            _ => i += 1,
        }
    }
    scan
}

/// The index of the bracket closing the one at `open`.
fn matching(toks: &[(Tok, usize)], open: usize, left: char, right: char) -> usize {
    let mut depth = 0;
    for (k, (t, _)) in toks.iter().enumerate().skip(open) {
        if *t == Tok::Punct(left) {
            depth += 1;
        } else if *t == Tok::Punct(right) {
            depth -= 1;
            if depth == 0 {
                return k;
            }
        }
    }
    toks.len().saturating_sub(1)
}

/// The full paths of a use tree (`a::{b, c::{d as e, *}}`), each with the
/// line of its last segment.
fn use_tree(toks: &[(Tok, usize)], prefix: &mut Vec<String>, out: &mut Vec<(usize, Vec<String>)>) {
    let depth = prefix.len();
    let mut i = 0;
    let mut line = toks.first().map_or(0, |t| t.1);
    while i < toks.len() {
        match &toks[i].0 {
            Tok::Ident(word) if word == "as" => i += 2,
            Tok::Ident(word) => {
                prefix.push(word.clone());
                line = toks[i].1;
                i += 1;
            }
            Tok::PathSep => i += 1,
            Tok::Punct('{') => {
                let end = matching(toks, i, '{', '}');
                // Split the group at its top-level commas.
                let mut start = i + 1;
                let mut nested = 0;
                for k in i + 1..=end {
                    match toks[k].0 {
                        Tok::Punct('{') => nested += 1,
                        Tok::Punct('}') if nested > 0 => nested -= 1,
                        Tok::Punct(',') | Tok::Punct('}') if nested == 0 => {
                            if start < k {
                                use_tree(&toks[start..k], prefix, out);
                            }
                            start = k + 1;
                        }
                        _ => {}
                    }
                }
                prefix.truncate(depth);
                return;
            }
            _ => i += 1,
        }
    }
    // `a::{self}` names `a`.
    let mut path = prefix.clone();
    if path.len() > 1 && path.last().is_some_and(|s| s == "self") {
        path.pop();
    }
    if !path.is_empty() {
        out.push((line, path));
    }
    prefix.truncate(depth);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources(files: &[(&str, &str)]) -> BTreeMap<String, String> {
        files
            .iter()
            .map(|(p, t)| ((*p).to_owned(), (*t).to_owned()))
            .collect()
    }

    fn shown(cycles: &[Cycle]) -> Vec<String> {
        cycles.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_cycle_between_siblings_is_found_with_where_each_edge_is() {
        let files = sources(&[
            ("lib.rs", "pub mod pass;\npub mod writes;\nmod leaf;\n"),
            (
                "pass.rs",
                "use crate::leaf::Vocabulary;\n\nuse crate::writes::{plan, Write};\n",
            ),
            (
                "writes.rs",
                "// crate::pass is only a comment\nfn f() {\n    super::pass::run();\n}\n",
            ),
            ("leaf.rs", "pub struct Vocabulary;\n"),
        ]);
        let cycles = cycles_in("demo", "src/", &files);
        assert_eq!(
            shown(&cycles),
            ["demo: pass -> writes -> pass\n    \
              pass -> writes: src/pass.rs:3 `crate::writes::plan` (and 1 more)\n    \
              writes -> pass: src/writes.rs:3 `super::pass::run`"]
        );
    }

    #[test]
    fn nested_siblings_and_longer_cycles_are_found() {
        let files = sources(&[
            ("main.rs", "mod manifest;\n"),
            ("manifest/mod.rs", "mod text;\nmod error;\nmod objects;\n"),
            ("manifest/text.rs", "use super::error::Error;\n"),
            (
                "manifest/error.rs",
                "use self::inner::X;\nmod inner { use crate::manifest::objects::Y; }\n",
            ),
            (
                "manifest/objects.rs",
                "pub(crate) use super::text::{self};\n",
            ),
        ]);
        let cycles = cycles_in("demo", "", &files);
        assert_eq!(cycles.len(), 1, "{:#?}", shown(&cycles));
        assert_eq!(
            cycles[0].modules(),
            [
                "manifest::error",
                "manifest::objects",
                "manifest::text",
                "manifest::error"
            ]
        );
        assert_eq!(cycles[0].edges[0].file, "manifest/error.rs");
        assert_eq!(cycles[0].edges[0].line, 2);
    }

    #[test]
    fn parents_children_tests_and_literals_are_not_cycles() {
        let files = sources(&[
            ("lib.rs", "mod a;\nmod b;\n#[cfg(test)]\nmod tests;\n"),
            // A child uses its parent, a parent its child.
            (
                "a.rs",
                "pub mod inner;\nuse inner::X;\nuse self::inner::Y;\n",
            ),
            (
                "a/inner.rs",
                "use super::Z;\nuse crate::a::W;\nuse crate::b::V;\n",
            ),
            (
                "b.rs",
                "const S: &str = \"crate::a::X\";\nconst R: &str = r#\"crate::a::\"#;\n\
                 fn f<'a>(c: char) -> bool { c == 'x' }\n\
                 macro_rules! m { () => { $crate::a::X } }\n\
                 #[cfg(test)]\nmod tests { use crate::a::X; }\n",
            ),
            ("tests.rs", "use crate::a::X;\nuse crate::b::Y;\n"),
        ]);
        assert_eq!(shown(&cycles_in("demo", "", &files)), Vec::<String>::new());
    }

    #[test]
    fn a_path_names_the_longest_module_it_reaches() {
        let files = sources(&[
            ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
            ("a/mod.rs", "pub mod x;\npub mod y;\n"),
            ("a/x.rs", "pub fn f() { crate::b::g(); }\n"),
            ("a/y.rs", ""),
            ("b.rs", "pub fn g() { crate::c::h(); }\n"),
            ("c.rs", "use crate::a::y::Thing;\n"),
        ]);
        let cycles = cycles_in("demo", "", &files);
        assert_eq!(
            cycles.iter().map(Cycle::modules).collect::<Vec<_>>(),
            [["a", "b", "c", "a"]]
        );
    }
}
