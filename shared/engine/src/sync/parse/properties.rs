//! Hostile repository content against every parser's bounds (issue 12 §1): generated alias bombs,
//! billion laughs, deep nesting, table bombs, pathological emphasis and links, long lines and
//! many patterns. A fixed seed and a modest case count here; `scripts/fuzz.sh` runs the same
//! properties with many more cases.

use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use serde_json::{Value as Json, json};

use super::codeowners::QUOTED_CHARS;
use super::*;
use syncplane_core::testing::check_property;

fn doc(path: &str, text: &str) -> ParsedDocument {
    parse_document(path, text.as_bytes()).expect("valid text within the cap is never refused")
}

fn stored_json_len(doc: &ParsedDocument) -> usize {
    serde_json::to_vec(&doc.frontmatter).map_or(usize::MAX, |json| json.len())
}

/// Every value of a JSON document, mapping keys included (what the frontmatter budget counts).
fn count_values(value: &Json) -> usize {
    match value {
        Json::Array(items) => 1 + items.iter().map(count_values).sum::<usize>(),
        Json::Object(map) => 1 + map.values().map(|v| 1 + count_values(v)).sum::<usize>(),
        _ => 1,
    }
}

/// The bounds every parsed document keeps, whatever its input.
fn assert_document_bounds(text: &str, doc: &ParsedDocument) -> Result<(), TestCaseError> {
    prop_assert!(doc.frontmatter.is_object());
    prop_assert!(stored_json_len(doc) <= MAX_FRONTMATTER_JSON_BYTES);
    prop_assert!(doc.body.len() <= BODY_TEXT_CAP_BYTES);
    prop_assert!(doc.headings.len() <= text.len() / 2 + 1);
    let heading_bytes: usize = doc.headings.iter().map(|h| h.text.len()).sum();
    prop_assert!(heading_bytes <= 2 * text.len() + 16);
    prop_assert!(doc.warnings.len() <= 4, "{:?}", doc.warnings);
    Ok(())
}

// ---- frontmatter -------------------------------------------------------------------------

/// The issue's probe: one anchor of `n` scalars aliased `m` times.
fn alias_bomb(n: usize, m: usize) -> String {
    format!(
        "---\na: &a [{}]\nb: [{}]\n---\n# Body\n",
        vec!["x"; n].join(", "),
        vec!["*a"; m].join(", ")
    )
}

/// Values `alias_bomb(n, m)` expands to: the root, two keys, `a` and `m` copies of it in `b`.
fn alias_bomb_values(n: usize, m: usize) -> usize {
    1 + 2 + (1 + n) + 1 + m * (1 + n)
}

/// Billion laughs: level 0 holds `fanout` scalars, each next level `fanout` aliases of the last.
fn billion_laughs(depth: usize, fanout: usize) -> String {
    let mut yaml = format!("---\nl0: &l0 [{}]\n", vec!["lol"; fanout].join(", "));
    for level in 1..=depth {
        let alias = format!("*l{}", level - 1);
        yaml.push_str(&format!(
            "l{level}: &l{level} [{}]\n",
            vec![alias.as_str(); fanout].join(", ")
        ));
    }
    yaml + "---\nbody\n"
}

fn billion_laughs_values(depth: usize, fanout: usize) -> usize {
    let mut level = 1 + fanout;
    let mut total = 1 + 1 + level;
    for _ in 1..=depth {
        level = (1 + fanout * level).min(usize::MAX / 2);
        total = total.saturating_add(1 + level);
    }
    total
}

#[test]
fn properties_alias_bombs_are_stored_exactly_under_the_budget_and_refused_over_it() {
    check_property((1usize..3000, 1usize..3000), |(n, m)| {
        let text = alias_bomb(n, m);
        let doc = doc("docs/bomb.md", &text);
        assert_document_bounds(&text, &doc)?;
        if alias_bomb_values(n, m) <= MAX_FRONTMATTER_VALUES {
            prop_assert!(doc.warnings.is_empty(), "{:?}", doc.warnings);
            prop_assert_eq!(count_values(&doc.frontmatter), alias_bomb_values(n, m));
        } else {
            prop_assert_eq!(&doc.frontmatter, &json!({}));
            prop_assert!(doc.warnings[0].starts_with("frontmatter not stored"));
        }
        prop_assert_eq!(doc.title, "Body");
        Ok(())
    });
}

#[test]
fn properties_billion_laughs_never_expands_past_the_budget() {
    check_property((0usize..12, 2usize..12), |(depth, fanout)| {
        let text = billion_laughs(depth, fanout);
        let doc = doc("docs/laughs.md", &text);
        assert_document_bounds(&text, &doc)?;
        let values = billion_laughs_values(depth, fanout);
        if values <= MAX_FRONTMATTER_VALUES {
            prop_assert_eq!(count_values(&doc.frontmatter), values);
        } else {
            // Stopped by the budget (or first by the YAML library's own alias jump limit).
            prop_assert_eq!(&doc.frontmatter, &json!({}));
            prop_assert_eq!(doc.warnings.len(), 1);
        }
        Ok(())
    });
}

#[test]
fn properties_frontmatter_is_stored_up_to_its_byte_cap_and_not_a_byte_more() {
    let near_cap = (MAX_FRONTMATTER_JSON_BYTES - 64)..(MAX_FRONTMATTER_JSON_BYTES + 64);
    check_property(near_cap, |len| {
        // `{"a":"xxx..."}` is 8 bytes plus the string.
        let text = format!("---\na: {}\n---\n", "x".repeat(len - 8));
        let doc = doc("docs/big.md", &text);
        prop_assert_eq!(
            stored_json_len(&doc) == len,
            len <= MAX_FRONTMATTER_JSON_BYTES
        );
        prop_assert_eq!(doc.warnings.is_empty(), len <= MAX_FRONTMATTER_JSON_BYTES);
        Ok(())
    });
}

/// YAML-ish pieces that reach anchors, aliases, merges, tags, flow and block nesting.
const YAML_PIECES: &[&str] = &[
    "&a ",
    "&b ",
    "*a",
    "*b",
    "<<: ",
    "<<: [*a, *b]",
    "!tag ",
    "!!str ",
    "[",
    "]",
    "{",
    "}",
    ", ",
    ": ",
    "- ",
    "\n",
    "\n  ",
    "\n    ",
    "? ",
    "key",
    "x",
    "\"\\0\"",
    "'q'",
    "|\n  ",
    ">\n  ",
    "1e400",
    "-.inf",
    ".nan",
    "99999999999999999999999",
    "~",
    "null",
    "true",
    "2024-01-01",
    "#",
];

fn yaml_soup() -> BoxedStrategy<String> {
    prop::collection::vec(prop::sample::select(YAML_PIECES), 0..400)
        .prop_map(|pieces| format!("---\n{}\n---\nbody\n", pieces.concat()))
        .boxed()
}

fn nested_yaml() -> BoxedStrategy<String> {
    (
        1usize..5000,
        prop::sample::select(&["[", "{a: ", "- ", "a:\n "][..]),
    )
        .prop_map(|(depth, open)| format!("---\nk: {}x\n---\nbody\n", open.repeat(depth)))
        .boxed()
}

#[test]
fn properties_any_frontmatter_keeps_the_bounds_and_never_panics() {
    check_property(prop_oneof![yaml_soup(), nested_yaml()], |text| {
        let doc = doc("docs/soup.md", &text);
        assert_document_bounds(&text, &doc)?;
        prop_assert!(doc.warnings.len() <= 2, "{:?}", doc.warnings);
        Ok(())
    });
}

// ---- markdown and MDX ---------------------------------------------------------------------

/// A table header of `columns` columns, then `rows` one-cell lines: comrak pads each to a full row.
fn table_bomb(columns: usize, rows: usize) -> String {
    format!(
        "{}|\n{}|\n{}",
        "|a".repeat(columns),
        "|-".repeat(columns),
        "x\n".repeat(rows)
    )
}

#[test]
fn properties_table_bombs_are_cut_off_at_the_node_budget() {
    check_property((1usize..2000, 1usize..60_000), |(columns, rows)| {
        let text = table_bomb(columns, rows);
        let doc = doc("docs/table.md", &text);
        assert_document_bounds(&text, &doc)?;
        let cells = columns * rows;
        let unread = doc
            .warnings
            .iter()
            .any(|w| w.starts_with("markdown not read"));
        if cells > MAX_MARKDOWN_NODES {
            prop_assert!(unread, "{cells} cells: {:?}", doc.warnings);
            // The raw text stands in for search.
            prop_assert!(doc.body.starts_with("|a|a"));
        }
        if cells < MAX_MARKDOWN_NODES / 4 {
            prop_assert!(!unread, "{cells} cells: {:?}", doc.warnings);
        }
        Ok(())
    });
}

/// Shapes known to be hard for markdown parsers, each repeated `n` times.
const MARKDOWN_SHAPES: &[(&str, &str, &str)] = &[
    ("> ", "deep quote", ""),
    ("- ", "deep list", ""),
    ("*", "a", "*"),
    ("**", "a", "**"),
    ("_", "a", "_"),
    ("[", "a", "](u)"),
    ("![", "a", "](u)"),
    ("[a](", "", ")"),
    ("`", "a", ""),
    ("<a href='", "", "'>"),
    ("&amp;", "", ""),
    ("[^a]", "\n\n[^a]: b", ""),
    ("[a]: u\n", "[a]", ""),
    ("# h\n", "", ""),
    ("www.a.com ", "", ""),
    ("a\\", "", ""),
    ("~~", "a", "~~"),
    ("- [ ] ", "", ""),
    ("    ", "code", ""),
    ("<!--", "", ""),
    ("|a", "\n|-|\n", ""),
];

fn markdown_shape() -> BoxedStrategy<String> {
    (prop::sample::select(MARKDOWN_SHAPES), 1usize..60_000)
        .prop_map(|((open, middle, close), n)| {
            let text = format!("{}{middle}{}", open.repeat(n), close.repeat(n));
            // Cut to the file cap on a char boundary (every shape is ASCII).
            text[..text.len().min(MAX_INPUT_BYTES)].to_owned()
        })
        .boxed()
}

/// Pieces for MDX and markdown soups: JSX, expressions, code, ESM and markdown syntax.
const MDX_PIECES: &[&str] = &[
    "<",
    ">",
    "{",
    "}",
    "`",
    "```",
    "~~~",
    "\n",
    "\n\n",
    "\r\n",
    "# ",
    "*",
    "_",
    "[",
    "]",
    "(",
    ")",
    "\\",
    "|",
    "-",
    "    ",
    "\t",
    "é",
    "\u{1F600}",
    "import ",
    "export ",
    "<Tag",
    "</Tag>",
    "/>",
    "<!--",
    "-->",
    "\"",
    "'",
    "{/*",
    "*/}",
    "//",
    "x",
    "word",
    "> ",
    "1. ",
    "|-|",
];

fn soup() -> BoxedStrategy<String> {
    prop::collection::vec(prop::sample::select(MDX_PIECES), 0..2000)
        .prop_map(|pieces| pieces.concat())
        .boxed()
}

#[test]
fn properties_pathological_markdown_keeps_the_bounds() {
    check_property(prop_oneof![markdown_shape(), soup()], |text| {
        for path in ["docs/x.md", "docs/x.mdx"] {
            let doc = doc(path, &text);
            assert_document_bounds(&text, &doc)?;
        }
        Ok(())
    });
}

#[test]
fn properties_the_mdx_rewrite_never_grows_the_text() {
    check_property(prop_oneof![soup(), markdown_shape()], |text| {
        let markdown = mdx::to_markdown(&text);
        prop_assert!(markdown.len() <= text.len() + 1);
        Ok(())
    });
}

// ---- CODEOWNERS ---------------------------------------------------------------------------

fn codeowners_token() -> BoxedStrategy<String> {
    prop_oneof![
        prop::sample::select(&["*", "/docs/", "!x", "*.[ch]", "#c", "\\#x", "a\\ b"][..])
            .prop_map(str::to_owned),
        prop::sample::select(&["@u", "@org/team", "a@b.co", "@-x", "x@", "@a/b/c"][..])
            .prop_map(str::to_owned),
        ("[a-z@/!\\[\\]é.\\-]", 0usize..3000).prop_map(|(c, n)| c.repeat(n)),
    ]
    .boxed()
}

fn codeowners_file() -> BoxedStrategy<String> {
    let line = prop::collection::vec(codeowners_token(), 0..6).prop_map(|tokens| tokens.join(" "));
    prop::collection::vec(line, 0..300)
        .prop_map(|lines| {
            let file = lines.join("\n");
            let mut cut = file.len().min(MAX_INPUT_BYTES);
            while !file.is_char_boundary(cut) {
                cut -= 1;
            }
            file[..cut].to_owned()
        })
        .boxed()
}

#[test]
fn properties_codeowners_gives_at_most_one_rule_or_warning_per_line_and_short_warnings() {
    check_property(codeowners_file(), |file| {
        let (rules, warnings) = parse_codeowners(file.as_bytes()).expect("valid text");
        let lines = file.split('\n').count();
        prop_assert!(rules.len() + warnings.len() <= lines);
        prop_assert!(rules.windows(2).all(|pair| pair[0].line < pair[1].line));
        for warning in &warnings {
            // Fixed text plus at most QUOTED_CHARS characters, each escaped to at most 10 bytes.
            prop_assert!(
                warning.reason.len() <= 80 + 10 * QUOTED_CHARS,
                "{}",
                warning.reason
            );
        }
        Ok(())
    });
}

// ---- at the limits ------------------------------------------------------------------------

#[test]
fn an_input_at_the_file_cap_parses_and_one_byte_more_is_refused() {
    let at_cap = "a".repeat(MAX_INPUT_BYTES);
    assert!(parse_document("docs/a.md", at_cap.as_bytes()).is_ok());
    assert!(parse_codeowners(at_cap.as_bytes()).is_ok());
    let over = "a".repeat(MAX_INPUT_BYTES + 1);
    assert_eq!(
        parse_document("docs/a.md", over.as_bytes()),
        Err(ParseRefusal::TooLarge)
    );
    assert_eq!(
        parse_codeowners(over.as_bytes()),
        Err(ParseRefusal::TooLarge)
    );
}

#[test]
fn frontmatter_at_the_value_budget_is_stored_and_one_value_more_is_not() {
    // The root, one key and a list: three values besides the list's items.
    let items = |n: usize| format!("---\nk: [{}]\n---\n", vec!["1"; n].join(", "));
    let at_budget = doc("docs/a.md", &items(MAX_FRONTMATTER_VALUES - 3));
    assert!(at_budget.warnings.is_empty(), "{:?}", at_budget.warnings);
    assert_eq!(count_values(&at_budget.frontmatter), MAX_FRONTMATTER_VALUES);
    let over = doc("docs/a.md", &items(MAX_FRONTMATTER_VALUES - 2));
    assert_eq!(over.frontmatter, json!({}));
    assert_eq!(
        over.warnings,
        ["frontmatter not stored: it expands to more than 10000 values (YAML aliases?)"]
    );
}

#[test]
fn the_issue_probe_alias_bombs_of_10_15_and_100_kb_are_stored_as_empty_objects_with_a_warning() {
    for n in [1_700, 2_500, 16_000] {
        let text = alias_bomb(n, n);
        assert!(text.len() > 10_000);
        let doc = doc("docs/probe.md", &text);
        assert_eq!(doc.frontmatter, json!({}));
        assert_eq!(doc.warnings.len(), 1);
        assert!(doc.warnings[0].starts_with("frontmatter not stored"));
        assert_eq!(doc.title, "Body", "the rest of the document still syncs");
    }
}

#[test]
fn a_table_bomb_keeps_its_raw_text_and_a_warning() {
    let text = table_bomb(1000, 50_000);
    let doc = doc("docs/table.md", &text);
    assert!(doc.headings.is_empty());
    assert!(doc.body.starts_with("|a|a|a"));
    assert_eq!(
        doc.warnings,
        [format!(
            "markdown not read: more than {MAX_MARKDOWN_NODES} nodes or {MAX_MARKDOWN_STEPS} parser steps; raw text kept for search"
        )]
    );
}

#[test]
fn a_codeowners_warning_quotes_a_token_up_to_its_cap_and_cuts_one_char_more() {
    let at_cap = format!("*.c {}", "a".repeat(QUOTED_CHARS));
    let (_, warnings) = parse_codeowners(at_cap.as_bytes()).unwrap();
    assert!(
        warnings[0]
            .reason
            .starts_with(&format!("invalid owner \"{}\":", "a".repeat(QUOTED_CHARS)))
    );
    let over = format!("*.c {}", "a".repeat(QUOTED_CHARS + 1));
    let (_, warnings) = parse_codeowners(over.as_bytes()).unwrap();
    assert!(warnings[0].reason.starts_with(&format!(
        "invalid owner \"{}\"...:",
        "a".repeat(QUOTED_CHARS)
    )));
}
