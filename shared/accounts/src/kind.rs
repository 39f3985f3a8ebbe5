//! The two kinds of token, each with its prefix (`crate::tokens` issues and checks them; an
//! `AccountsError` names the kind it refused).

/// A read token's prefix.
pub const READ_TOKEN_PREFIX: &str = "spr_";
/// A device token's prefix.
pub const DEVICE_TOKEN_PREFIX: &str = "spd_";

/// The two kinds of token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    Device,
    Read,
}

impl TokenKind {
    pub fn prefix(self) -> &'static str {
        match self {
            Self::Device => DEVICE_TOKEN_PREFIX,
            Self::Read => READ_TOKEN_PREFIX,
        }
    }
}
