//! The checks that keep false positives low: Shannon entropy, character classes, and what a value
//! assigned to a secret-looking name must look like to be taken for a secret (so
//! `password=hunter` in prose passes and `password=Xk9#mP2$vL7q` does not).

use super::rules::Check;

/// Shannon entropy of `s`, in bits per byte.
pub(super) fn shannon(s: &str) -> f64 {
    let bytes = s.as_bytes();
    if bytes.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for &b in bytes {
        counts[usize::from(b)] += 1;
    }
    let n = bytes.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

struct Classes {
    upper: bool,
    lower: bool,
    digit: bool,
}

fn classes(s: &str) -> Classes {
    let b = s.as_bytes();
    Classes {
        upper: b.iter().any(u8::is_ascii_uppercase),
        lower: b.iter().any(u8::is_ascii_lowercase),
        digit: b.iter().any(u8::is_ascii_digit),
    }
}

/// Whether the secret `text[start..end]` passes the rule's check.
pub(super) fn passes(check: Check, text: &str, start: usize, end: usize) -> bool {
    let value = &text[start..end];
    match check {
        Check::None => true,
        Check::EndsToken => text
            .as_bytes()
            .get(end)
            .is_none_or(|&b| !(b.is_ascii_alphanumeric() || b == b'_' || b == b'-')),
        Check::UpperAndLower => {
            let c = classes(value);
            c.upper && c.lower
        }
        Check::TwoClasses => {
            let c = classes(value);
            u8::from(c.upper) + u8::from(c.lower) + u8::from(c.digit) >= 2
        }
        Check::LetterAndDigit => {
            let c = classes(value);
            (c.upper || c.lower) && c.digit
        }
        Check::UrlPassword => url_password(value),
        Check::Generic => generic_value(value),
    }
}

/// Words that make a value a placeholder, not a secret.
const PLACEHOLDERS: &[&str] = &[
    "redacted",
    "example",
    "your",
    "placeholder",
    "changeme",
    "dummy",
    "xxxx",
    "****",
    "sample",
    "<",
];

fn placeholder(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    PLACEHOLDERS.iter().any(|p| lower.contains(p))
        || value.starts_with(['$', '%', '{', '<'])
        || value.contains("${")
        || value.contains("{{")
}

/// A URL's password: anything but a placeholder (`[:password]`, `:pass@`), a variable, or stars.
fn url_password(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    !(placeholder(value)
        || value.bytes().all(|b| b == b'*' || b == b'x' || b == b'X')
        || ["pass", "pwd", "secret", "token", "user"].contains(&lower.as_str())
        || lower.contains("password")
        || lower.contains("passwd"))
}

/// A value assigned to a secret-looking name is a secret when it is long enough, mixes letters
/// and digits, is random enough for its length, and is neither a placeholder, a reference
/// (`$VAR`, `${VAR}`, a path, a URL, an AWS ARN) nor an identifier (`prod_db_password_v2`, `config.token2`).
pub(super) fn generic_value(value: &str) -> bool {
    let c = classes(value);
    if value.len() < 8 || !c.digit || !(c.upper || c.lower) {
        return false;
    }
    // The most a value of this length can have is log2(len): 3 bits at 8 bytes.
    let floor = (0.85 * (value.len() as f64).log2()).min(3.0);
    if shannon(value) < floor {
        return false;
    }
    let reference = value.starts_with(['@', '.', '/', '~', '-'])
        || value.contains("://")
        || value.starts_with("arn:");
    if placeholder(value) || reference {
        return false;
    }
    !identifier(value)
}

/// Words, alone or joined by `_`, `-`, `.` or `:`, each letters (camelCase at most, no run of
/// capitals inside a lowercase word) with at most three trailing digits: a name, not a secret
/// (`nextPageToken2`, `prod_db_password_v2`, `config.token2`).
fn identifier(value: &str) -> bool {
    value
        .split(['_', '-', '.', ':'])
        .filter(|p| !p.is_empty())
        .all(|p| {
            let letters = &p[..p.bytes().take_while(u8::is_ascii_alphabetic).count()];
            let digits = &p[letters.len()..];
            let b = letters.as_bytes();
            let camel = b.iter().all(u8::is_ascii_uppercase)
                || b.windows(2)
                    .all(|w| !(w[0].is_ascii_uppercase() && w[1].is_ascii_uppercase()));
            !letters.is_empty()
                && camel
                && digits.len() <= 3
                && digits.bytes().all(|b| b.is_ascii_digit())
        })
}
