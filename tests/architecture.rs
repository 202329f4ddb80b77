//! The floors of ARCHITECTURE.md, checked against the code's own imports.
//!
//! Every file under `src/` sits on one floor (the table [`FLOORS`], top to bottom, the
//! same as ARCHITECTURE.md's). A file may name what is on its own floor and below,
//! never above, and the files import one another without a cycle. This test reads each
//! file's `crate::`, `super::` and `self::` paths (in `use` lines and inline; unit tests
//! under `#[cfg(test)]` are left out: they may reach anything), resolves each to the
//! file that defines it, and fails on an import up the floors or a cycle.
//!
//! Inside the domain floor, [`DOMAIN_ORDER`] holds conversation on top, then
//! engagement, voice and the import, then contact (policy that reads), then records,
//! settings and people; only `engagement::reactions` runs the reactions a write owes.
//!
//! `cargo test --test architecture -- --nocapture` prints the graph's summary: files
//! per floor, imports up the floors, cycles, and the files straight in `src/domain/`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The floors, top first. A module path names a folder or a file under `src/`; the
/// longest matching entry places a file.
const FLOORS: &[(&str, &[&str])] = &[
    // Compiled only for tests and benches; it runs a whole server.
    ("test kit", &["testkit"]),
    ("main and cli", &["main", "cli", "import_cli"]),
    (
        "server, admin, maintenance, replica",
        &["server", "admin", "maintenance", "replica"],
    ),
    ("api and console", &["api", "console"]),
    ("engine", &["engine"]),
    ("domain", &["domain"]),
    ("providers and webhooks", &["providers", "webhooks"]),
    ("store and metrics", &["store", "metrics"]),
    ("config", &["config"]),
    (
        "leaf utilities",
        &[
            "lib",
            "attention",
            "carrier_text",
            "channel",
            "client_address",
            "csv_cell",
            "cursor",
            "duration",
            "error",
            "histogram",
            "http_client",
            "http_failure",
            "ics",
            "ids",
            "json_writer",
            "outbound_address",
            "outbound_tls",
            "phone",
            "sms_segments",
            "time",
            "words",
        ],
    ),
];

/// The order inside the domain floor, top first, as [`FLOORS`] orders the floors: a
/// domain folder uses its own sub-floor and those below. Records, settings and people
/// know nothing of contact, engagement, voice or the import: a write of theirs owes
/// engagement's reactions (`records::written::Written`), which only
/// `engagement::reactions` runs.
const DOMAIN_ORDER: &[(&str, &[&str])] = &[
    ("conversation", &["domain/conversation"]),
    (
        "engagement, voice, import",
        &["domain/engagement", "domain/voice", "domain/import"],
    ),
    ("contact", &["domain/contact"]),
    (
        "records, settings, people",
        &["domain/records", "domain/settings", "domain/people"],
    ),
];

/// A file of `src/` as its module path (`domain/leads`, `store` for `store/mod.rs`).
type Module = String;

fn main_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/domain/leads.rs` → `domain/leads`; `src/store/mod.rs` → `store`.
fn module_of(src: &Path, file: &Path) -> Module {
    let relative = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs").to_string();
    if stem != "mod" {
        parts.push(stem);
    }
    if parts.is_empty() {
        return "lib".to_string();
    }
    parts.join("/")
}

/// The floor of a module (0 is the top).
fn floor_of(module: &str) -> Option<usize> {
    let mut best: Option<(usize, usize)> = None;
    for (floor, (_, prefixes)) in FLOORS.iter().enumerate() {
        for prefix in *prefixes {
            let matches = module == *prefix || module.starts_with(&format!("{prefix}/"));
            if matches && best.is_none_or(|(len, _)| prefix.len() > len) {
                best = Some((prefix.len(), floor));
            }
        }
    }
    best.map(|(_, floor)| floor)
}

/// The code without comments, string and char literals, and without the unit tests:
/// every `#[cfg(test)]` item, wherever it stands in the file, is cut out whole.
fn code_of(text: &str) -> String {
    without_test_items(&stripped(text))
}

/// `code` without each item under `#[cfg(test)]`: from the attribute to the end of the
/// item (its `;`, or the `}` that closes its first block).
fn without_test_items(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at..];
        let mut depth = 0usize;
        let mut end = item.len();
        for (i, c) in item.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = i + 1;
                    break;
                }
                _ => {}
            }
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// The code without comments, string and char literals.
fn stripped(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let rest = &text[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            i += rest.find("*/").map_or(rest.len(), |end| end + 2);
        } else if rest.starts_with("r#\"") || rest.starts_with("r\"") || rest.starts_with("br\"") {
            let open = rest.find('"').unwrap_or(0);
            let hashes = rest[..open].matches('#').count();
            let close = format!("\"{}", "#".repeat(hashes));
            i += open + 1;
            i += text[i..]
                .find(&close)
                .map_or(text.len() - i, |e| e + close.len());
            out.push_str("\"\"");
        } else if bytes[i] == b'"' {
            i += 1;
            while i < bytes.len() && bytes[i] != b'"' {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if bytes[i] == b'\'' && is_char_literal(rest) {
            i += rest[1..].find('\'').map_or(1, |end| end + 2);
            out.push_str("' '");
        } else {
            let c = rest.chars().next().expect("not at the end");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// `'a'`, `'\n'`, `'\u{1f}'` rather than a lifetime `'a`.
fn is_char_literal(rest: &str) -> bool {
    let mut chars = rest.chars().skip(1);
    match chars.next() {
        Some('\\') => true,
        Some(_) => chars.next() == Some('\''),
        None => false,
    }
}

/// Every path that starts at `crate`, `super` or `self` in `code`, as segments relative
/// to the crate root, expanding `use` groups (`use crate::{a, b::{c, d}}`).
fn paths_in(code: &str, here: &[String]) -> Vec<Vec<String>> {
    let tokens = tokenize(code);
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let t = tokens[i].as_str();
        let preceded_by_colons = i > 0 && tokens[i - 1] == "::";
        if (t == "crate" || t == "super" || t == "self")
            && !preceded_by_colons
            && tokens.get(i + 1).is_some_and(|n| n == "::")
        {
            // The module whose items `self::` names: a file's own module, whose
            // parent is `super::` (for `mod.rs` the folder is the module itself).
            let mut base: Vec<String> = match t {
                "crate" => Vec::new(),
                _ => here.to_vec(),
            };
            let mut j = i;
            // `super::super::...`
            while j < tokens.len() && (tokens[j] == "super" || tokens[j] == "self") {
                if tokens[j] == "super" {
                    base.pop();
                }
                if tokens.get(j + 1).is_some_and(|n| n == "::") {
                    j += 2;
                } else {
                    break;
                }
            }
            if t == "crate" {
                j = i + 2;
            }
            let (paths, end) = path_tail(&tokens, j, base);
            out.extend(paths);
            i = end.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

/// Reads `a::b::{c, d::e}` from `tokens[at..]` after `prefix`; the paths and where it
/// stopped.
fn path_tail(
    tokens: &[String],
    mut at: usize,
    mut prefix: Vec<String>,
) -> (Vec<Vec<String>>, usize) {
    loop {
        match tokens.get(at).map(String::as_str) {
            Some("{") => {
                let mut paths = Vec::new();
                at += 1;
                loop {
                    match tokens.get(at).map(String::as_str) {
                        Some("}") => return (paths, at + 1),
                        Some(",") => at += 1,
                        None => return (paths, at),
                        Some(_) => {
                            let (inner, end) = path_tail(tokens, at, prefix.clone());
                            paths.extend(inner);
                            // Skip `as name` and anything up to the next `,` or `}`.
                            at = end;
                            while let Some(t) = tokens.get(at) {
                                if t == "," || t == "}" {
                                    break;
                                }
                                at += 1;
                            }
                        }
                    }
                }
            }
            Some(word) if is_identifier(word) => {
                if word != "self" {
                    prefix.push(word.to_string());
                }
                at += 1;
                if tokens.get(at).is_some_and(|t| t == "::") {
                    at += 1;
                } else {
                    return (vec![prefix], at);
                }
            }
            Some("*") => return (vec![prefix], at + 1),
            _ => return (vec![prefix], at),
        }
    }
}

fn is_identifier(word: &str) -> bool {
    word.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
        && word.chars().all(|c| c.is_alphanumeric() || c == '_')
}

fn tokenize(code: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut chars = code.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        if c.is_alphanumeric() || c == '_' {
            let mut end = start + c.len_utf8();
            while let Some(&(i, n)) = chars.peek() {
                if n.is_alphanumeric() || n == '_' {
                    end = i + n.len_utf8();
                    chars.next();
                } else {
                    break;
                }
            }
            tokens.push(code[start..end].to_string());
        } else if c == ':' && chars.peek().is_some_and(|&(_, n)| n == ':') {
            chars.next();
            tokens.push("::".to_string());
        } else if !c.is_whitespace() {
            tokens.push(c.to_string());
        }
    }
    tokens
}

/// The file a path names: its longest prefix that is a module of `modules`.
fn resolve(path: &[String], modules: &BTreeSet<Module>) -> Option<Module> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].join("/"))
        .find(|candidate| modules.contains(candidate))
}

struct Graph {
    modules: BTreeSet<Module>,
    edges: BTreeMap<Module, BTreeSet<Module>>,
}

fn graph() -> Graph {
    let src = main_dir();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: BTreeSet<Module> = files.iter().map(|f| module_of(&src, f)).collect();
    let mut edges = BTreeMap::new();
    for file in &files {
        let module = module_of(&src, file);
        let text = std::fs::read_to_string(file).expect("readable source");
        // `self::` inside `a/b.rs` is `a::b`; `super::` is `a`. In `a/mod.rs`, `self`
        // is `a` and `super` its parent: the module path is the same either way.
        let here: Vec<String> = if module == "lib" || module == "main" {
            Vec::new()
        } else {
            module.split('/').map(str::to_string).collect()
        };
        let mut targets = BTreeSet::new();
        for path in paths_in(&code_of(&text), &here) {
            if let Some(target) = resolve(&path, &modules) {
                if target != module && !module.starts_with(&format!("{target}/")) {
                    targets.insert(target);
                }
            }
        }
        edges.insert(module, targets);
    }
    Graph { modules, edges }
}

/// Strongly connected components of more than one file (Tarjan's algorithm).
fn cycles(graph: &Graph) -> Vec<Vec<Module>> {
    struct State<'a> {
        graph: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<Module>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        let graph = s.graph;
        for w in graph.edges.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut state = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for module in &graph.modules {
        if !state.index.contains_key(module.as_str()) {
            visit(&mut state, module);
        }
    }
    state.out
}

/// Imports from a file to a file on a higher floor: (from, to).
fn imports_up(graph: &Graph) -> Vec<(Module, Module)> {
    let mut up = Vec::new();
    for (from, targets) in &graph.edges {
        for to in targets {
            if let (Some(a), Some(b)) = (floor_of(from), floor_of(to)) {
                if b < a {
                    up.push((from.clone(), to.clone()));
                }
            }
        }
    }
    up
}

/// The sub-floor of a file in a domain folder (0 is the top); `None` outside them.
fn domain_floor_of(module: &str) -> Option<usize> {
    DOMAIN_ORDER.iter().position(|(_, folders)| {
        folders
            .iter()
            .any(|f| module == *f || module.starts_with(&format!("{f}/")))
    })
}

/// Imports from a domain folder's file to a file of a higher sub-floor: (from, to).
fn domain_imports_up(graph: &Graph) -> Vec<(Module, Module)> {
    let mut up = Vec::new();
    for (from, targets) in &graph.edges {
        for to in targets {
            if let (Some(a), Some(b)) = (domain_floor_of(from), domain_floor_of(to)) {
                if b < a {
                    up.push((from.clone(), to.clone()));
                }
            }
        }
    }
    up
}

/// Records, settings and people import nothing from contact, engagement, voice or the
/// import; every domain folder has its place in `DOMAIN_ORDER`.
#[test]
fn records_and_settings_stay_below_what_reacts_to_them() {
    let graph = graph();
    let folders: BTreeSet<String> = graph
        .modules
        .iter()
        .filter_map(|m| m.strip_prefix("domain/"))
        .filter_map(|rest| rest.split_once('/').map(|(folder, _)| folder))
        .map(|folder| format!("domain/{folder}"))
        .collect();
    let unplaced: Vec<&String> = folders
        .iter()
        .filter(|f| domain_floor_of(f).is_none())
        .collect();
    assert!(
        unplaced.is_empty(),
        "domain folders without a place in DOMAIN_ORDER (and ARCHITECTURE.md): {unplaced:?}"
    );
    let up = domain_imports_up(&graph);
    println!("imports up the domain's order: {}", up.len());
    for (from, to) in &up {
        println!("  {from} -> {to}");
    }
    assert!(up.is_empty(), "imports up the domain's order: {up:?}");
}

/// Only `engagement::reactions` takes a write's value out of its `Written` (and so runs
/// the reactions it owes): no other file calls `into_value_and_reactions`.
#[test]
fn only_engagement_reactions_reacts_to_a_write() {
    let src = main_dir();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let callers: Vec<Module> = files
        .iter()
        .filter(|f| {
            let text = std::fs::read_to_string(f).expect("readable source");
            code_of(&text).contains("into_value_and_reactions")
        })
        .map(|f| module_of(&src, f))
        .collect();
    assert_eq!(
        callers,
        ["domain/engagement/reactions", "domain/records/written"],
        "only engagement::reactions unpacks a Written (records::written defines it)"
    );
}

/// Contact only reads: no file of `domain/contact` takes a write transaction to
/// write with (`&mut WriteTx`), reacts (`.react(`) or names a write of records.
#[test]
fn contact_only_reads() {
    let src = main_dir();
    let mut files = Vec::new();
    rust_files(&src.join("domain/contact"), &mut files);
    assert!(!files.is_empty(), "domain/contact has files");
    let writers: Vec<Module> = files
        .iter()
        .filter(|f| {
            let text = std::fs::read_to_string(f).expect("readable source");
            let code = code_of(&text);
            code.contains("&mut WriteTx") || code.contains(".react(")
        })
        .map(|f| module_of(&src, f))
        .collect();
    assert!(writers.is_empty(), "contact files that write: {writers:?}");
}

#[test]
fn every_file_of_src_has_a_floor() {
    let graph = graph();
    let homeless: Vec<&Module> = graph
        .modules
        .iter()
        .filter(|m| floor_of(m).is_none())
        .collect();
    assert!(
        homeless.is_empty(),
        "files on no floor (add them to FLOORS and ARCHITECTURE.md): {homeless:?}"
    );
}

/// Prints the graph's summary, then holds it to the floors: no import up the floors,
/// no cycle, and no file straight in `src/domain/` (each feature has its folder).
#[test]
fn no_import_runs_up_the_floors_or_in_a_circle() {
    let graph = graph();
    println!("files: {}", graph.modules.len());
    println!(
        "imports (file to file): {}",
        graph.edges.values().map(BTreeSet::len).sum::<usize>()
    );
    for (floor, (name, _)) in FLOORS.iter().enumerate() {
        let files = graph
            .modules
            .iter()
            .filter(|m| floor_of(m) == Some(floor))
            .count();
        println!("floor {}: {name}: {files} files", FLOORS.len() - floor);
    }
    let flat_domain: Vec<&Module> = graph
        .modules
        .iter()
        .filter(|m| m.starts_with("domain/") && m.matches('/').count() == 1)
        .filter(|m| {
            graph
                .modules
                .iter()
                .all(|o| !o.starts_with(&format!("{m}/")))
        })
        .collect();
    println!("files straight in src/domain/: {}", flat_domain.len());
    let up = imports_up(&graph);
    println!("imports up the floors: {}", up.len());
    for (from, to) in &up {
        println!("  {from} -> {to}");
    }
    let cycles = cycles(&graph);
    println!("cycles: {}", cycles.len());
    for cycle in &cycles {
        println!("  {}", cycle.join(" <-> "));
    }
    assert!(up.is_empty(), "imports up the floors: {up:?}");
    assert!(cycles.is_empty(), "import cycles: {cycles:?}");
    assert!(
        flat_domain.is_empty(),
        "files straight in src/domain/ (each belongs to a feature's folder): {flat_domain:?}"
    );
}

#[test]
fn test_items_are_cut_out_wherever_they_stand() {
    let code = code_of(
        "use crate::a;\n#[cfg(test)]\nmod tests { fn f() { crate::b::c(); } }\n\
         pub struct After;\nuse crate::d;\n#[cfg(test)]\nuse crate::e;\nfn g() {}\n",
    );
    assert!(
        code.contains("crate::a") && code.contains("crate::d"),
        "{code}"
    );
    assert!(
        code.contains("struct After") && code.contains("fn g"),
        "{code}"
    );
    assert!(
        !code.contains("crate::b") && !code.contains("crate::e"),
        "{code}"
    );
}

#[test]
fn paths_are_read_from_use_groups_and_inline_paths() {
    let code = code_of(
        "use crate::{a::b, c::{d, e::F}};\n// crate::commented::out\nfn f() { super::g::h(); let s = \"crate::x::y\"; crate::k::l(); }",
    );
    let here = vec!["m".to_string(), "n".to_string()];
    let paths = paths_in(&code, &here);
    let joined: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert_eq!(joined, ["a::b", "c::d", "c::e::F", "m::g::h", "k::l"]);
}
