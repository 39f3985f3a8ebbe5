//! Frontmatter: a YAML block between leading `---` lines, turned into a JSON object (spec, one
//! repository: "Parse frontmatter, title and headings"). Bad YAML is a warning and an empty
//! object, never an error, and so is frontmatter past its limits: a document always syncs.
//!
//! Limits (frontmatter is written by anyone who can change a synced repository):
//! - [`MAX_FRONTMATTER_VALUES`] values after alias expansion. An anchor of n values aliased n
//!   times is n² values from a file of a few n bytes (10 KB made 20 MB of JSON and 451 MiB of
//!   memory). Aliases stay allowed, because real frontmatter uses them for shared blocks, and the
//!   budget is counted while the YAML is converted ([`super::yaml`]): the expansion stops at the
//!   budget instead of being built and measured afterwards.
//! - [`MAX_FRONTMATTER_JSON_BYTES`] of JSON stored per document, counted in the same pass and
//!   measured exactly at the end.
//! - [`MAX_FLOW_DEPTH`] levels of `[`/`{`, checked before parsing (block nesting meets the YAML
//!   parser's own recursion limit of 128).
//!
//! Time and memory are then linear in the block's size (at most the file cap, 256 KiB) plus the
//! budget.

use serde_json::{Map, Value as Json};

use super::yaml::{self, YamlError};

/// Values one frontmatter block may expand to, aliases included. Real frontmatter holds tens.
pub const MAX_FRONTMATTER_VALUES: usize = 10_000;
/// Bytes of JSON one document's stored frontmatter may take.
pub const MAX_FRONTMATTER_JSON_BYTES: usize = 64 * 1024;

const LIMITS: yaml::Limits = yaml::Limits {
    values: MAX_FRONTMATTER_VALUES,
    json_bytes: MAX_FRONTMATTER_JSON_BYTES,
};

/// A document split into its frontmatter and the markdown that follows.
#[derive(Debug, PartialEq)]
pub struct Split<'a> {
    pub frontmatter: Map<String, Json>,
    pub markdown: &'a str,
    pub warnings: Vec<String>,
}

/// Splits off a leading frontmatter block. YAML (`---`, closed by `---` or `...`) is read; TOML
/// (`+++`) is recognised so it stays out of the search text, but not read (no TOML parser here).
pub fn split(text: &str) -> Split<'_> {
    let mut warnings = Vec::new();
    let Some((fence, inner, markdown)) = block(text) else {
        return Split {
            frontmatter: Map::new(),
            markdown: text,
            warnings,
        };
    };
    let frontmatter = if fence == "+++" {
        warnings.push("TOML frontmatter (+++) is not read".to_owned());
        Map::new()
    } else {
        yaml_to_object(inner, &mut warnings)
    };
    Split {
        frontmatter,
        markdown,
        warnings,
    }
}

/// The markdown after a leading frontmatter block (the whole text when there is none), without
/// reading the block: what [`split`] gives as `markdown`.
pub fn body(text: &str) -> &str {
    block(text).map_or(text, |(_, _, rest)| rest)
}

/// Finds `fence\n ... \nfence` at the very start: (fence, inner text, rest). An unclosed block is
/// not frontmatter (a leading `---` is then a thematic break).
fn block(text: &str) -> Option<(&'static str, &str, &str)> {
    let first_end = text.find('\n')?;
    let fence = match text[..first_end].trim_end() {
        "---" => "---",
        "+++" => "+++",
        _ => return None,
    };
    let body_start = first_end + 1;
    let mut line_start = body_start;
    while line_start <= text.len() {
        let line_end = text[line_start..]
            .find('\n')
            .map_or(text.len(), |i| line_start + i);
        let line = text[line_start..line_end].trim_end();
        if line == fence || (fence == "---" && line == "...") {
            let rest = text.get(line_end + 1..).unwrap_or("");
            return Some((fence, &text[body_start..line_start], rest));
        }
        line_start = line_end + 1;
    }
    None
}

/// Deeper flow nesting than this is refused before parsing: the YAML parser's cost grows with
/// nesting depth times length (seconds for a 256 KB file of `{a: {a: ...`), and its own recursion
/// limit (128) would refuse such a document anyway. Brackets in strings count too, which only
/// matters for absurd documents.
const MAX_FLOW_DEPTH: usize = 256;

fn flow_depth_exceeds(yaml: &str, limit: usize) -> bool {
    let mut depth = 0usize;
    for b in yaml.bytes() {
        match b {
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

fn yaml_to_object(yaml: &str, warnings: &mut Vec<String>) -> Map<String, Json> {
    if flow_depth_exceeds(yaml, MAX_FLOW_DEPTH) {
        warnings.push("invalid frontmatter: nested too deeply".to_owned());
        return Map::new();
    }
    let converted = match yaml::to_json(yaml, LIMITS) {
        Ok(converted) => converted,
        Err(error) => {
            warnings.push(refusal_warning(error));
            return Map::new();
        }
    };
    let object = match converted.value {
        Json::Object(object) => object,
        Json::Null => Map::new(),
        _ => {
            warnings.push("invalid frontmatter: not a mapping of keys to values".to_owned());
            return Map::new();
        }
    };
    // The budget counted a lower bound; escapes can add to it, so the stored size is measured.
    if json_len(&object) > MAX_FRONTMATTER_JSON_BYTES {
        warnings.push(refusal_warning(YamlError::TooLarge));
        return Map::new();
    }
    if converted.had_nul {
        // Postgres jsonb cannot store \u0000, which YAML escapes like "\0" can produce.
        warnings.push("frontmatter: NUL characters removed".to_owned());
    }
    object
}

fn refusal_warning(error: YamlError) -> String {
    match error {
        YamlError::Invalid(message) => format!("invalid frontmatter: {message}"),
        YamlError::TooManyValues => format!(
            "frontmatter not stored: it expands to more than {MAX_FRONTMATTER_VALUES} values (YAML aliases?)"
        ),
        YamlError::TooLarge => format!(
            "frontmatter not stored: larger than {} KiB as JSON",
            MAX_FRONTMATTER_JSON_BYTES / 1024
        ),
    }
}

/// Length of the JSON text the object is stored as.
fn json_len(object: &Map<String, Json>) -> usize {
    serde_json::to_vec(object).map_or(usize::MAX, |json| json.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn frontmatter_becomes_json_with_nesting_lists_and_dates_as_strings() {
        let text = "---\ntitle: Hello\ndate: 2024-01-15\ncount: 3\nratio: 0.5\ndraft: false\ntags: [a, b]\nauthor:\n  name: Ada\n  links:\n    - https://example.com\n1: numeric key\n---\n# Body\n";
        let split = split(text);
        assert!(split.warnings.is_empty(), "{:?}", split.warnings);
        assert_eq!(
            Json::Object(split.frontmatter),
            json!({
                "title": "Hello",
                "date": "2024-01-15",
                "count": 3,
                "ratio": 0.5,
                "draft": false,
                "tags": ["a", "b"],
                "author": {"name": "Ada", "links": ["https://example.com"]},
                "1": "numeric key"
            })
        );
        assert_eq!(split.markdown, "# Body\n");
    }

    #[test]
    fn invalid_frontmatter_is_an_empty_object_and_a_warning() {
        let split = split("---\ntitle: [unclosed\n---\ntext\n");
        assert!(split.frontmatter.is_empty());
        assert_eq!(split.warnings.len(), 1);
        assert!(split.warnings[0].starts_with("invalid frontmatter"));
        assert_eq!(split.markdown, "text\n");
    }

    #[test]
    fn frontmatter_that_is_not_a_mapping_is_an_empty_object_and_a_warning() {
        let split = split("---\n- a\n- b\n---\n");
        assert!(split.frontmatter.is_empty());
        assert_eq!(split.warnings.len(), 1);
    }

    #[test]
    fn empty_frontmatter_is_an_empty_object_without_warning() {
        let split = split("---\n---\nbody");
        assert!(split.frontmatter.is_empty());
        assert!(split.warnings.is_empty());
        assert_eq!(split.markdown, "body");
    }

    #[test]
    fn unclosed_frontmatter_is_markdown() {
        let text = "---\ntitle: x\n\nno closing fence\n";
        let split = split(text);
        assert!(split.frontmatter.is_empty());
        assert_eq!(split.markdown, text);
    }

    #[test]
    fn frontmatter_closes_with_dots_and_crlf_lines() {
        let split = split("---\r\ntitle: x\r\n...\r\nbody");
        assert_eq!(Json::Object(split.frontmatter), json!({"title": "x"}));
        assert_eq!(split.markdown, "body");
    }

    #[test]
    fn nul_escapes_in_frontmatter_are_removed_for_jsonb() {
        let split = split("---\ntitle: \"a\\0b\"\n---\n");
        assert_eq!(Json::Object(split.frontmatter), json!({"title": "ab"}));
        assert_eq!(split.warnings.len(), 1);
    }

    #[test]
    fn an_alias_bomb_in_frontmatter_is_refused_not_expanded() {
        let mut yaml = String::from("---\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..20 {
            let prev = i - 1;
            yaml.push_str(&format!(
                "a{i}: &a{i} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"
            ));
        }
        yaml.push_str("---\n");
        let split = split(&yaml);
        assert!(split.frontmatter.is_empty());
        assert_eq!(split.warnings.len(), 1);
    }

    #[test]
    fn deeply_nested_frontmatter_is_refused_before_parsing() {
        let deep = format!("---\na: {}\n---\nbody", "{a: ".repeat(50_000));
        let split = split(&deep);
        assert!(split.frontmatter.is_empty());
        assert_eq!(split.warnings, ["invalid frontmatter: nested too deeply"]);
        let shallow = format!("---\na: {}1{}\n---\n", "[".repeat(20), "]".repeat(20));
        assert!(split_warnings_empty(&shallow));
    }

    fn split_warnings_empty(text: &str) -> bool {
        split(text).warnings.is_empty()
    }

    #[test]
    fn toml_frontmatter_stays_out_of_the_markdown_with_a_warning() {
        let split = split("+++\ntitle = \"x\"\n+++\nbody");
        assert!(split.frontmatter.is_empty());
        assert_eq!(split.markdown, "body");
        assert_eq!(split.warnings.len(), 1);
    }
}
