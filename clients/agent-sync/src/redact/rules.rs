//! The ruleset: one entry per kind of secret, each with an id (the placeholder names it), a
//! pattern, the keywords one of which every match contains (the prefilter: a string without any
//! of them never reaches a regex), the capture group that holds the secret itself (0: the whole
//! match), an optional entropy floor and a check on what was captured.
//!
//! Order is priority: where two rules match overlapping text the earlier names the placeholder
//! (an Anthropic key is also shaped like an OpenAI one; a JWT behind `Bearer` is a JWT).

/// A prefilter keyword.
#[derive(Debug, Clone, Copy)]
pub(super) enum Kw {
    /// Case-sensitive, and must start a token (the byte before it is not `[A-Za-z0-9_]`): the
    /// fixed prefix of a vendor's token.
    Token(&'static str),
    /// Case-sensitive, anywhere.
    Plain(&'static str),
    /// ASCII case-insensitive, anywhere: a context word.
    Word(&'static str),
}

/// What the captured secret must also satisfy (beyond the pattern and the entropy floor).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Check {
    None,
    /// The byte after the secret is not `[A-Za-z0-9_-]` (the token is not part of a longer one).
    EndsToken,
    /// Upper- and lowercase letters both present (a base64 secret, not a hex digest).
    UpperAndLower,
    /// At least two of: uppercase, lowercase, digit (a random token, not a word-ish slug).
    TwoClasses,
    /// A letter and a digit both present.
    LetterAndDigit,
    /// A URL's password that is not a placeholder or a variable reference.
    UrlPassword,
    /// A value assigned to a secret-looking name: see [`super::entropy::generic_value`].
    Generic,
}

#[derive(Debug)]
pub(super) struct Rule {
    pub id: &'static str,
    pub pattern: &'static str,
    pub keywords: &'static [Kw],
    pub group: usize,
    pub entropy: Option<f64>,
    pub check: Check,
}

const fn rule(id: &'static str, pattern: &'static str, keywords: &'static [Kw]) -> Rule {
    Rule {
        id,
        pattern,
        keywords,
        group: 0,
        entropy: None,
        check: Check::None,
    }
}

impl Rule {
    const fn group(mut self, group: usize) -> Self {
        self.group = group;
        self
    }
    const fn entropy(mut self, floor: f64) -> Self {
        self.entropy = Some(floor);
        self
    }
    const fn check(mut self, check: Check) -> Self {
        self.check = check;
        self
    }
}

use Kw::{Plain, Token, Word};

pub(super) const PRIVATE_KEY: &str = "private-key";
pub(super) const GCP_SERVICE_ACCOUNT: &str = "gcp-service-account";
pub(super) const GENERIC_SECRET: &str = "generic-secret";
pub(super) const TWILIO_AUTH_TOKEN: &str = "twilio-auth-token";

/// The secret-looking names of the generic rule (an assignment's left side, a JSON object's key),
/// shared by [`RULES`]'s last pattern and [`KEY_NAME`].
macro_rules! secret_name {
    () => {
        r"[a-z0-9_.-]{0,40}?(?:password|passwd|passphrase|pwd|secret|api[_-]?key|apikey|access[_-]?key|auth[_-]?token|access[_-]?token|refresh[_-]?token|token|credentials?)(?:[_-]?(?:key|value|token|secret|str|string))?"
    };
}

/// A JSON object key that names a secret: its string value is checked as a whole.
pub(super) const KEY_NAME: &str = concat!(r"(?i)^", secret_name!(), "$");

/// Keywords `<prefix>0` to `<prefix>f` for each prefix, after any `first` ones: how a Twilio id
/// (`AC` or `SK` and 32 hex) starts.
macro_rules! hex_prefixed {
    ([$($first:expr),*] $($prefix:literal)+) => {
        &[
            $($first,)*
            $(
                Token(concat!($prefix, "0")), Token(concat!($prefix, "1")),
                Token(concat!($prefix, "2")), Token(concat!($prefix, "3")),
                Token(concat!($prefix, "4")), Token(concat!($prefix, "5")),
                Token(concat!($prefix, "6")), Token(concat!($prefix, "7")),
                Token(concat!($prefix, "8")), Token(concat!($prefix, "9")),
                Token(concat!($prefix, "a")), Token(concat!($prefix, "b")),
                Token(concat!($prefix, "c")), Token(concat!($prefix, "d")),
                Token(concat!($prefix, "e")), Token(concat!($prefix, "f")),
            )+
        ]
    };
}

const TWILIO_KW: &[Kw] = hex_prefixed!([] "AC" "SK");

/// What makes a 32-hex run worth a look as a Twilio auth token: the word, or an account SID.
const TWILIO_TOKEN_KW: &[Kw] = hex_prefixed!([Word("twilio")] "AC");

/// The rules, highest priority first (at most 64: candidates are a bit set).
pub(super) const RULES: &[Rule] = &[
    // A PEM block, with its END line (headers, base64, and whatever a tool printed between:
    // line numbers, arrows, tabs); a block cut short loses its body, line by line, each line
    // perhaps behind a line number (a header alone, named in prose, is no key).
    rule(
        PRIVATE_KEY,
        concat!(
            r"-{4,5} ?BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)? ?-{4,5}(?:",
            r"(?s:.*?)-{4,5} ?END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)? ?-{4,5}",
            r"|(?:(?:[ \t]*(?:\r?\n|\\[nr])+[ \t]*(?:[0-9]{1,7}(?:→|\t|[ ]?\||:)?[ \t]*)?)?[A-Za-z0-9+/=]{16,})+",
            r")"
        ),
        &[Plain("PRIVATE KEY")],
    ),
    rule(
        "jwt",
        r"(?-u:\b)eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
        &[Token("eyJ")],
    ),
    rule(
        "anthropic-api-key",
        r"(?-u:\b)sk-ant-[A-Za-z0-9_-]{20,}",
        &[Token("sk-ant-")],
    ),
    rule(
        "openrouter-api-key",
        r"(?-u:\b)sk-or-v1-[A-Za-z0-9]{32,}",
        &[Token("sk-or-v1-")],
    ),
    rule(
        "openai-api-key",
        r"(?-u:\b)sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
        &[Token("sk-")],
    )
    .entropy(3.5)
    .check(Check::TwoClasses),
    rule(
        "github-token",
        r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
        &[
            Token("ghp_"),
            Token("gho_"),
            Token("ghu_"),
            Token("ghs_"),
            Token("ghr_"),
            Token("github_pat_"),
        ],
    ),
    rule(
        "gitlab-token",
        r"(?-u:\b)gl(?:pat|dt|rt|ptt)-[A-Za-z0-9_-]{20,}",
        &[
            Token("glpat-"),
            Token("gldt-"),
            Token("glrt-"),
            Token("glptt-"),
        ],
    ),
    rule(
        "stripe-key",
        r"(?-u:\b)(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,}|whsec_[A-Za-z0-9+/=]{24,})",
        &[
            Token("sk_live_"),
            Token("rk_live_"),
            Token("sk_test_"),
            Token("rk_test_"),
            Token("whsec_"),
        ],
    ),
    rule(
        "slack-token",
        r"(?-u:\b)xox[abprs]-[A-Za-z0-9-]{10,}",
        &[
            Token("xoxa-"),
            Token("xoxb-"),
            Token("xoxp-"),
            Token("xoxr-"),
            Token("xoxs-"),
        ],
    ),
    rule(
        "google-api-key",
        r"(?-u:\b)AIza[0-9A-Za-z_-]{35}",
        &[Token("AIza")],
    )
    .check(Check::EndsToken),
    rule(
        "twilio-key",
        r"(?-u:\b)(?:AC|SK)[0-9a-f]{32}(?-u:\b)",
        TWILIO_KW,
    ),
    // A Twilio auth token is 32 hex digits with no prefix: taken when an account SID or the word
    // "twilio" stands near it, before or after (a client's two arguments, `curl -u SID:token`,
    // an env file's neighbouring lines).
    rule(
        TWILIO_AUTH_TOKEN,
        concat!(
            r"(?:(?i:twilio)|(?-u:\b)AC[0-9a-f]{32})(?s:.{0,200}?)[^0-9A-Za-z]([0-9a-f]{32})(?-u:\b)",
            r"|(?-u:\b)([0-9a-f]{32})(?-u:\b)(?s:.{0,200}?)(?-u:\b)AC[0-9a-f]{32}(?-u:\b)"
        ),
        TWILIO_TOKEN_KW,
    )
    .group(1)
    .entropy(3.0)
    .check(Check::LetterAndDigit),
    rule(
        "sendgrid-api-key",
        r"(?-u:\b)SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}",
        &[Token("SG.")],
    ),
    rule(
        "supabase-token",
        r"(?-u:\b)(?:sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_-]{20,})",
        &[Token("sbp_"), Token("sb_secret_")],
    ),
    // A bot token: the bot's id, a colon and 35 characters; in a URL it follows `/bot` directly
    // (`/bot123456789:AA.../sendMessage`), so no word boundary is asked before it, only that no
    // digit is.
    rule(
        "telegram-bot-token",
        r"(?:^|[^0-9])([0-9]{8,10}:[A-Za-z0-9_-]{35})",
        &[Plain(":AA"), Word("telegram"), Plain("/bot")],
    )
    .group(1)
    .check(Check::EndsToken),
    rule(
        "npm-token",
        r"(?-u:\b)npm_[A-Za-z0-9]{36}",
        &[Token("npm_")],
    )
    .check(Check::EndsToken),
    rule(
        "pypi-token",
        r"(?-u:\b)pypi-AgE[A-Za-z0-9_-]{50,}",
        &[Token("pypi-AgE")],
    ),
    rule(
        "aws-access-key-id",
        r"(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?-u:\b)",
        &[
            Token("AKIA"),
            Token("ASIA"),
            Token("ABIA"),
            Token("ACCA"),
            Token("A3T"),
        ],
    ),
    // 40 characters of base64, near "aws" or "secret", alone (not cut from a longer run).
    rule(
        "aws-secret-access-key",
        r"(?i:aws|secret)[^\n]{0,48}?[^A-Za-z0-9/+]([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)",
        &[Word("aws"), Word("secret")],
    )
    .group(1)
    .entropy(4.3)
    .check(Check::UpperAndLower),
    // A service-account document's key id (its private_key is a PEM block: the rule above).
    rule(
        GCP_SERVICE_ACCOUNT,
        r#"\\*"private_key_id\\*"\s*:\s*\\*"([A-Za-z0-9]{16,})"#,
        &[Plain("private_key_id")],
    )
    .group(1),
    // scheme://user:password@host: the password goes.
    rule(
        "url-credentials",
        r#"(?-u:\b)[A-Za-z][A-Za-z0-9+.-]{1,30}://[^\s:/?#@"'<>\\]*:([^\s/?#@"'<>\\]+)@"#,
        &[Plain("://")],
    )
    .group(1)
    .check(Check::UrlPassword),
    // An Authorization header's Basic credentials, or a command line's `user:password`
    // (`curl -u`, `--user`) or `--password VALUE` (`--password=VALUE` is the generic rule's).
    rule(
        "basic-auth",
        concat!(
            r#"(?i)authorization\\*["'\]]*\s*[:=]\s*\\*["']?basic\s+([A-Za-z0-9+/]{8,}={0,2})"#,
            r#"|(?:^|\s)(?:-u|--user|--proxy-user)(?:\s+|=)\\*["']?[^\s:"'@]{1,64}:([^\s"'@\\]{6,})"#,
            r#"|(?:^|\s)--(?:http-|ftp-)?password\s+\\*["']?([^\s"'\\]{6,})"#
        ),
        &[Word("basic"), Plain("-u"), Word("--user"), Word("--proxy-user"), Word("password")],
    )
    .group(1)
    .check(Check::UrlPassword),
    rule(
        "bearer-token",
        r"(?i)(?-u:\b)bearer\s+([A-Za-z0-9._~+/=-]{16,})",
        &[Word("bearer")],
    )
    .group(1)
    .entropy(3.0)
    .check(Check::LetterAndDigit),
    // name = value, name: value, "name": "value", name => value, | name | value | (the value
    // alone goes); and a name and its value as two members (`name: X` then `value: ...`, as
    // Kubernetes, ECS and CI files list environment variables).
    rule(
        GENERIC_SECRET,
        concat!(
            r#"(?i)(?-u:\b)"#,
            secret_name!(),
            r#"\\*["']?\s*(?::=|=>|=|:|\|)\s*\\*["']?([!#$%&*+\-./0-9:=?@A-Z^_a-z|~]{8,})"#,
            r#"|(?-u:\b)name\\*["']?\s*[:=]\s*\\*["']?"#,
            secret_name!(),
            r#"\\*["']?\s*,?(?:\s|\\[nrt])*-?\s*\\*["']?value\\*["']?\s*[:=]\s*\\*["']?([!#$%&*+\-./0-9:=?@A-Z^_a-z|~]{8,})"#
        ),
        &[
            Word("passw"),
            Word("passphrase"),
            Word("pwd"),
            Word("secret"),
            Word("apikey"),
            Word("api_key"),
            Word("api-key"),
            Word("accesskey"),
            Word("access_key"),
            Word("access-key"),
            Word("token"),
            Word("credential"),
        ],
    )
    .group(1)
    .check(Check::Generic),
];
