//! MDX to plain markdown, so comrak can read it: ESM blocks (`import`/`export`), JSX tags and
//! `{expressions}` are removed outside code, and indentation is capped at three columns because
//! MDX has no indented code blocks (content nested in JSX is often indented).
//!
//! This is a tolerant rewrite, not an MDX parser: anything it cannot make sense of stays as text,
//! so a file that is not valid MDX still yields a document. Every scan is linear: a failed scan
//! marks its block so the same bytes are not searched again.

use std::collections::HashMap;

/// Rewrites an MDX file as markdown.
pub(crate) fn to_markdown(mdx: &str) -> String {
    let mut out = String::with_capacity(mdx.len());
    let mut prose = String::new();
    let mut fence: Option<Fence> = None;
    let mut in_esm = false;
    let mut after_blank = true;

    for raw in mdx.split('\n') {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if let Some(open) = &fence {
            let (width, content) = indent(line);
            if open.is_closed_by(content) {
                out.push_str(content);
                fence = None;
            } else {
                out.push_str(dedent(line, width.min(open.indent)));
            }
            out.push('\n');
            continue;
        }
        let blank = line.trim().is_empty();
        if in_esm {
            // An ESM block runs to the next blank line.
            in_esm = !blank;
            after_blank = blank;
            if blank {
                prose.push('\n');
            }
            continue;
        }
        if after_blank && is_esm_start(line) {
            in_esm = true;
            continue;
        }
        after_blank = blank;
        let (width, content) = indent(line);
        if let Some(open) = Fence::open(content, width) {
            strip_jsx(&prose, &mut out);
            prose.clear();
            out.push_str(content);
            out.push('\n');
            fence = Some(open);
            continue;
        }
        if width > 3 {
            prose.push_str("   ");
            prose.push_str(content);
        } else {
            prose.push_str(line);
        }
        prose.push('\n');
    }
    strip_jsx(&prose, &mut out);
    out
}

struct Fence {
    marker: u8,
    length: usize,
    indent: usize,
}

impl Fence {
    fn open(content: &str, indent: usize) -> Option<Fence> {
        let marker = *content.as_bytes().first()?;
        if marker != b'`' && marker != b'~' {
            return None;
        }
        let length = content.bytes().take_while(|&b| b == marker).count();
        let info = &content[length..];
        if length < 3 || (marker == b'`' && info.contains('`')) {
            return None;
        }
        Some(Fence {
            marker,
            length,
            indent,
        })
    }

    fn is_closed_by(&self, content: &str) -> bool {
        let run = content.bytes().take_while(|&b| b == self.marker).count();
        run >= self.length && content[run..].trim().is_empty()
    }
}

/// Leading whitespace width (a tab counts as 4) and the rest of the line.
fn indent(line: &str) -> (usize, &str) {
    let content = line.trim_start_matches([' ', '\t']);
    let width = line[..line.len() - content.len()]
        .bytes()
        .map(|b| if b == b'\t' { 4 } else { 1 })
        .sum();
    (width, content)
}

/// Removes up to `columns` leading whitespace characters.
fn dedent(line: &str, columns: usize) -> &str {
    let skip = line
        .bytes()
        .take(columns)
        .take_while(|&b| b == b' ' || b == b'\t')
        .count();
    &line[skip..]
}

fn is_esm_start(line: &str) -> bool {
    ["import", "export"].iter().any(|keyword| {
        line.strip_prefix(keyword)
            .and_then(|rest| rest.chars().next())
            .is_some_and(|c| c.is_whitespace() || c == '{' || c == '*')
    })
}

/// Copies prose to `out` with JSX tags and `{expressions}` replaced by a space (keeping their line
/// breaks), leaving code spans and backslash escapes alone.
fn strip_jsx(prose: &str, out: &mut String) {
    let bytes = prose.as_bytes();
    let blocks = BlockEnds::new(bytes);
    // A failed scan covers up to its block's end; later starts in that range are text.
    let mut tags_are_text_before = 0;
    let mut braces_are_text_before = 0;
    let backtick_runs = BacktickRuns::new(bytes);
    let mut copied = 0;
    let mut i = 0;

    while i < bytes.len() {
        let end = blocks.end_after(i);
        match bytes[i] {
            b'\\' => {
                i += if bytes.get(i + 1).is_some_and(u8::is_ascii) {
                    2
                } else {
                    1
                }
            }
            b'`' => {
                let run = bytes[i..].iter().take_while(|&&b| b == b'`').count();
                // A code span closes at the next run of the same length in the same block.
                i = match backtick_runs.next_after(run, i) {
                    Some(close) if close < end => close + run,
                    _ => i + run,
                };
            }
            b'<' if i >= tags_are_text_before && starts_tag(bytes.get(i + 1).copied()) => {
                match tag_end(bytes, i, end) {
                    Some(tag_end) => {
                        replace(prose, copied, i, tag_end, out);
                        copied = tag_end;
                        i = tag_end;
                    }
                    None => {
                        tags_are_text_before = end;
                        i += 1;
                    }
                }
            }
            b'{' if i >= braces_are_text_before => match braces_end(bytes, i, end) {
                Some(expr_end) => {
                    replace(prose, copied, i, expr_end, out);
                    copied = expr_end;
                    i = expr_end;
                }
                None => {
                    braces_are_text_before = end;
                    i += 1;
                }
            },
            _ => i += 1,
        }
    }
    out.push_str(prose.get(copied..).unwrap_or(""));
}

/// Copies `prose[copied..start]`, then a space and the line breaks of `prose[start..end]`. Every
/// index is at an ASCII byte, so the slices are on char boundaries.
fn replace(prose: &str, copied: usize, start: usize, end: usize, out: &mut String) {
    out.push_str(prose.get(copied..start).unwrap_or(""));
    out.push(' ');
    let breaks = prose.get(start..end).map_or(0, |s| s.matches('\n').count());
    out.extend(std::iter::repeat_n('\n', breaks));
}

fn starts_tag(next: Option<u8>) -> bool {
    next.is_some_and(|b| b.is_ascii_alphabetic() || matches!(b, b'/' | b'>' | b'!' | b'_' | b'$'))
}

/// Start positions of every backtick run, by run length, so finding a closing run is a lookup.
struct BacktickRuns(HashMap<usize, Vec<usize>>);

impl BacktickRuns {
    fn new(bytes: &[u8]) -> Self {
        let mut runs: HashMap<usize, Vec<usize>> = HashMap::new();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'`' {
                let len = bytes[i..].iter().take_while(|&&b| b == b'`').count();
                runs.entry(len).or_default().push(i);
                i += len;
            } else {
                i += 1;
            }
        }
        BacktickRuns(runs)
    }

    fn next_after(&self, len: usize, at: usize) -> Option<usize> {
        let starts = self.0.get(&len)?;
        starts
            .get(starts.partition_point(|&start| start <= at))
            .copied()
    }
}

/// End (exclusive) of the JSX tag or HTML comment at `start`, if it closes before `end`.
fn tag_end(bytes: &[u8], start: usize, end: usize) -> Option<usize> {
    if bytes[start..end].starts_with(b"<!--") {
        return find(bytes, start + 4, end, b"-->").map(|at| at + 3);
    }
    let mut j = start + 1;
    let mut quote = None;
    while j < end {
        let b = bytes[j];
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None => match b {
                b'"' | b'\'' => quote = Some(b),
                b'{' => j = braces_end(bytes, j, end)? - 1,
                b'>' => return Some(j + 1),
                _ => {}
            },
        }
        j += 1;
    }
    None
}

/// End (exclusive) of the balanced `{...}` at `start`, skipping JavaScript strings and comments.
fn braces_end(bytes: &[u8], start: usize, end: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut j = start;
    while j < end {
        match bytes[j] {
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(j + 1);
                }
            }
            q @ (b'"' | b'\'' | b'`') => {
                j += 1;
                while j < end && bytes[j] != q {
                    j += if bytes[j] == b'\\' { 2 } else { 1 };
                }
            }
            b'/' if bytes.get(j + 1) == Some(&b'*') => j = find(bytes, j + 2, end, b"*/")? + 1,
            b'/' if bytes.get(j + 1) == Some(&b'/') => {
                j = find(bytes, j + 2, end, b"\n").unwrap_or(end);
            }
            _ => {}
        }
        j += 1;
    }
    None
}

fn find(bytes: &[u8], from: usize, end: usize, needle: &[u8]) -> Option<usize> {
    bytes
        .get(from..end)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|at| from + at)
}

/// Where each block of prose ends: at a blank line (or the end), as JSX and code spans do not
/// cross blank lines.
struct BlockEnds(Vec<usize>);

impl BlockEnds {
    fn new(bytes: &[u8]) -> Self {
        let mut ends = Vec::new();
        let mut line_start = 0;
        for (at, &b) in bytes.iter().enumerate() {
            if b == b'\n' {
                if bytes[line_start..at].iter().all(u8::is_ascii_whitespace) {
                    ends.push(line_start);
                }
                line_start = at + 1;
            }
        }
        ends.push(bytes.len());
        BlockEnds(ends)
    }

    /// The first block end after `at`.
    fn end_after(&self, at: usize) -> usize {
        let index = self.0.partition_point(|&end| end <= at);
        self.0
            .get(index)
            .copied()
            .unwrap_or(self.0.last().copied().unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(markdown: &str) -> Vec<&str> {
        markdown.split_whitespace().collect()
    }

    #[test]
    fn esm_blocks_are_removed_but_import_inside_a_paragraph_is_text() {
        let mdx = "import { Tabs } from '@site/tabs'\nimport Foo, {\n  Bar,\n} from './foo'\n\nexport const meta = { a: 1 }\n\nText.\nimport inside a paragraph is text\n";
        assert_eq!(
            words(&to_markdown(mdx)),
            ["Text.", "import", "inside", "a", "paragraph", "is", "text"]
        );
    }

    #[test]
    fn jsx_tags_and_expressions_are_removed_but_their_children_stay() {
        let mdx = "<Tabs defaultValue=\"a\" values={[{label: 'A', value: 'a'}]}>\n  <TabItem value=\"a\">\n\n    ## Inside\n\n    Press <Kbd>Ctrl</Kbd> now. {/* it's a comment */}\n\n  </TabItem>\n</Tabs>\n\n<Card\n  title=\"Multi line\"\n  items={[1, 2]}\n/>\n\nValue: {props.value > 1 ? \"big\" : \"small\"}\n";
        let markdown = to_markdown(mdx);
        assert!(markdown.contains("\n   ## Inside\n"), "{markdown}");
        assert_eq!(
            words(&markdown),
            ["##", "Inside", "Press", "Ctrl", "now.", "Value:"]
        );
    }

    #[test]
    fn code_stays_as_written() {
        let mdx = "Use `<Tabs>` and `{x}`.\n\n  ```jsx\n  <Tabs>{x}</Tabs>\n  ```\n\nAn escaped \\<Tag> and \\{brace}.\n";
        let markdown = to_markdown(mdx);
        assert!(markdown.contains("`<Tabs>` and `{x}`"));
        assert!(
            markdown.contains("```jsx\n<Tabs>{x}</Tabs>\n```\n"),
            "{markdown}"
        );
        assert!(markdown.contains("\\<Tag> and \\{brace}"));
    }

    #[test]
    fn unclosed_tags_and_braces_stay_as_text() {
        let mdx = "a <b c=\"unclosed\n\n{ open brace\n";
        assert_eq!(
            words(&to_markdown(mdx)),
            ["a", "<b", "c=\"unclosed", "{", "open", "brace"]
        );
    }
}
