use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

use super::*;

fn parse(path: &str, text: &str) -> ParsedDocument {
    parse_document(path, text.as_bytes()).unwrap()
}

#[test]
fn title_prefers_frontmatter_then_first_h1_then_file_name() {
    let both = "---\ntitle: From Frontmatter\n---\n## Intro\n\n# First H1\n\n# Second H1\n";
    assert_eq!(parse("docs/a.md", both).title, "From Frontmatter");

    let h1_only = "## Intro\n\n# First *H1*\n\n# Second H1\n";
    assert_eq!(parse("docs/a.md", h1_only).title, "First H1");

    let non_string_title = "---\ntitle: 42\n---\n# Heading Title\n";
    assert_eq!(parse("docs/a.md", non_string_title).title, "Heading Title");

    let blank_title = "---\ntitle: \"  \"\n---\nNo heading.\n";
    assert_eq!(
        parse("docs/getting-started.md", blank_title).title,
        "getting-started"
    );

    assert_eq!(parse("docs/guide/setup.mdx", "text").title, "setup");
    assert_eq!(parse("README", "text").title, "README");
    assert_eq!(parse("docs/v1.2/notes.md", "").title, "notes");
}

#[test]
fn frontmatter_is_always_a_json_object() {
    let doc = parse("a.md", "# No frontmatter\n");
    assert_eq!(doc.frontmatter, json!({}));
    assert!(doc.warnings.is_empty());

    let doc = parse(
        "a.md",
        "---\ntitle: T\ndate: 2024-03-01\ntags:\n  - sync\n  - docs\nnested: {a: {b: [1, 2]}}\n---\nBody\n",
    );
    assert_eq!(
        doc.frontmatter,
        json!({"title": "T", "date": "2024-03-01", "tags": ["sync", "docs"], "nested": {"a": {"b": [1, 2]}}})
    );
}

#[test]
fn invalid_frontmatter_is_an_empty_object_and_a_warning_not_an_error() {
    let doc = parse(
        "docs/x.md",
        "---\ntitle: \"unterminated\nkey: : :\n---\n# Real Title\n\nText.\n",
    );
    assert_eq!(doc.frontmatter, json!({}));
    assert_eq!(doc.warnings.len(), 1, "{:?}", doc.warnings);
    assert!(doc.warnings[0].contains("invalid frontmatter"));
    assert_eq!(doc.title, "Real Title");
    assert_eq!(doc.body, "Real Title Text.");
}

#[test]
fn body_text_has_no_frontmatter_and_no_markup() {
    let doc = parse(
        "a.md",
        "---\nsecret_key_name: frontmatter-only\n---\n# Title\n\nSome **bold** `code` and [link](https://example.com).\n",
    );
    assert_eq!(doc.body, "Title Some bold code and link.");
}

#[test]
fn mdx_body_has_no_jsx_and_no_import_or_export_lines() {
    let mdx = "---\ntitle: MDX Page\n---\nimport Tabs from '@theme/Tabs';\nimport { Note } from '../components';\n\nexport const toc = [{ value: 'x' }];\n\n# Using Tabs\n\n<Tabs groupId=\"os\" values={[{ label: 'Linux', value: 'linux' }]}>\n  <TabItem value=\"linux\">\n\n    ## On Linux\n\n    Run the `sync` command.\n\n  </TabItem>\n</Tabs>\n\n<Note type=\"info\">Remember {props.name} this.</Note>\n\n{/* a comment that isn't text */}\n";
    let doc = parse("docs/tabs.mdx", mdx);
    assert_eq!(doc.title, "MDX Page");
    assert_eq!(
        doc.body,
        "Using Tabs On Linux Run the sync command. Remember this."
    );
    assert_eq!(
        doc.headings,
        vec![
            Heading {
                level: 1,
                text: "Using Tabs".into(),
                anchor: "using-tabs".into()
            },
            Heading {
                level: 2,
                text: "On Linux".into(),
                anchor: "on-linux".into()
            },
        ]
    );
}

#[test]
fn a_weird_mdx_file_still_yields_a_document() {
    let mdx = "import {\n\n<Broken attr={{ unclosed\n\n}}}} </Close> <<>> {`\n\n```jsx\nnever closed fence <A>\n";
    let doc = parse("docs/weird.mdx", mdx);
    assert_eq!(doc.title, "weird");
    assert!(doc.body.contains("never closed fence <A>"), "{}", doc.body);
}

#[test]
fn markdown_files_keep_angle_brackets_in_code() {
    let doc = parse("a.md", "Use `Vec<String>` here.\n");
    assert_eq!(doc.body, "Use Vec<String> here.");
}

#[test]
fn body_is_capped_on_a_char_boundary_with_a_warning() {
    // Within the input cap only text longer than its source can pass the cap: `&nGt;` is six
    // bytes of two 3-byte chars, so the cap cannot fall on a char boundary by luck either.
    let paragraph = "&nGt; ".repeat(MAX_INPUT_BYTES / 6);
    let doc = parse("big.md", &paragraph);
    assert!(doc.body.len() <= BODY_TEXT_CAP_BYTES);
    assert!(doc.body.len() > BODY_TEXT_CAP_BYTES - 4);
    assert!(
        doc.body
            .chars()
            .all(|c| c == '\u{226B}' || c == '\u{20D2}' || c == ' ')
    );
    assert_eq!(
        doc.warnings,
        vec!["search text truncated to 256 KiB".to_owned()]
    );
}

#[test]
fn a_document_with_a_nul_byte_or_invalid_utf8_is_refused() {
    assert_eq!(
        parse_document("a.md", b"# Hi\n\0"),
        Err(ParseRefusal::NulByte)
    );
    assert_eq!(
        parse_document("a.md", b"# Hi \xc3\x28"),
        Err(ParseRefusal::InvalidUtf8)
    );
    assert_eq!(
        ParseRefusal::NulByte.to_string(),
        "file contains a NUL byte, which Postgres text cannot store"
    );
    assert_eq!(
        ParseRefusal::InvalidUtf8.to_string(),
        "file is not valid UTF-8"
    );
}

#[test]
fn a_bom_is_stripped_before_frontmatter() {
    let doc = parse("a.md", "\u{feff}---\ntitle: With BOM\n---\nText\n");
    assert_eq!(doc.title, "With BOM");
    assert_eq!(doc.body, "Text");
}

#[test]
fn a_heading_serializes_as_level_text_anchor() {
    let heading = Heading {
        level: 2,
        text: "A B".into(),
        anchor: "a-b".into(),
    };
    assert_eq!(
        serde_json::to_value(&heading).unwrap(),
        json!({"level": 2, "text": "A B", "anchor": "a-b"})
    );
}

/// Pieces that drive both parsers into their edge cases, mixed with random bytes.
const PIECES: &[&str] = &[
    "<",
    ">",
    "{",
    "}",
    "`",
    "```",
    "~~~",
    "---\n",
    "+++\n",
    "...\n",
    "\n",
    "\n\n",
    "\r\n",
    "#",
    "# ",
    "## ",
    "*",
    "_",
    "[",
    "]",
    "(",
    ")",
    "!",
    "\\",
    "|",
    "-",
    " ",
    "    ",
    "\t",
    "é",
    "€",
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
    "@",
    "@org/team",
    ":",
    "&",
    "&#0;",
    "- ",
    "1. ",
    "> ",
    "title: ",
    "*&a [*a, *a]",
    "{/*",
    "*/}",
    "x",
    "word",
    "user@example.com",
];

fn random_input(rng: &mut StdRng) -> Vec<u8> {
    let mut bytes = Vec::new();
    for _ in 0..rng.random_range(0..120) {
        if rng.random_bool(0.05) {
            bytes.push(rng.random());
        } else {
            bytes.extend_from_slice(PIECES[rng.random_range(0..PIECES.len())].as_bytes());
        }
    }
    bytes
}

#[test]
fn garbage_input_never_panics_either_parser() {
    let mut rng = StdRng::seed_from_u64(0x5eed);
    for round in 0..4000 {
        let raw = random_input(&mut rng);
        // The same garbage made valid text, so it reaches the parsers instead of being refused.
        let text = String::from_utf8_lossy(&raw)
            .replace('\0', "x")
            .into_bytes();
        let path = if round % 2 == 0 {
            "docs/x.md"
        } else {
            "docs/x.mdx"
        };
        for bytes in [&raw, &text] {
            if let Ok(doc) = parse_document(path, bytes) {
                assert!(doc.frontmatter.is_object());
                assert!(doc.body.len() <= BODY_TEXT_CAP_BYTES);
                assert!(!doc.title.is_empty());
            }
            let _ = parse_codeowners(bytes);
        }
        assert!(parse_document(path, &text).is_ok());
        assert!(parse_codeowners(&text).is_ok());
    }
}
