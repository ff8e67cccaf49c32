//! The dashboard's token: who holds it may read runs and decide gates. It is compared in constant time, never
//! logged (its `Debug` is redacted), and either made fresh at start-up or given by the operator.

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;

use crate::Dashboard;
use crate::error::ApiError;

/// The shortest token accepted from the operator: anything shorter is guessable.
pub const MIN_TOKEN_LEN: usize = 24;

/// A bearer token.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

/// Why a token given by the operator was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Too short to resist guessing.
    #[error("the dashboard token has {0} characters; use at least {MIN_TOKEN_LEN} (or let agency make one)")]
    TooShort(usize),
    /// Contains characters that cannot travel in a header or URL fragment unescaped.
    #[error("the dashboard token may hold only letters, digits, `-`, `_` and `.`")]
    BadCharacter,
}

impl Token {
    /// A fresh token: 244 random bits from the operating system, as 64 hex digits.
    pub fn generate() -> Token {
        let a = uuid::Uuid::new_v4().simple().to_string();
        let b = uuid::Uuid::new_v4().simple().to_string();
        Token(format!("{a}{b}"))
    }

    /// A token the operator chose.
    pub fn parse(text: &str) -> Result<Token, TokenError> {
        let text = text.trim();
        if text.len() < MIN_TOKEN_LEN {
            return Err(TokenError::TooShort(text.len()));
        }
        if !text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
            return Err(TokenError::BadCharacter);
        }
        Ok(Token(text.to_string()))
    }

    /// The token itself, to show the operator once (in the dashboard's URL).
    pub fn reveal(&self) -> &str {
        &self.0
    }

    /// Whether `presented` is this token, in time that does not depend on where they differ.
    pub fn matches(&self, presented: &str) -> bool {
        let (a, b) = (self.0.as_bytes(), presented.as_bytes());
        let mut difference = a.len() ^ b.len();
        for (i, x) in a.iter().enumerate() {
            let y = b.get(i).copied().unwrap_or(0);
            difference |= usize::from(x ^ y);
        }
        difference == 0
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// Proof that a request carried the dashboard's token: every API handler takes one.
#[derive(Debug, Clone, Copy)]
pub struct Authorized;

impl FromRequestParts<Dashboard> for Authorized {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &Dashboard) -> Result<Self, Self::Rejection> {
        let presented = parts
            .headers
            .get(AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .map(str::trim);
        match presented {
            Some(token) if state.token.matches(token) => Ok(Authorized),
            Some(_) => Err(ApiError::unauthorized(
                "the token does not match this dashboard's",
            )),
            None => Err(ApiError::unauthorized(
                "missing `Authorization: Bearer <token>`; the token is in the URL `agency dashboard` printed",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_tokens_are_long_and_distinct() {
        let (a, b) = (Token::generate(), Token::generate());
        assert_eq!(a.reveal().len(), 64);
        assert_ne!(a, b);
        assert!(Token::parse(a.reveal()).is_ok());
    }

    #[test]
    fn only_the_same_token_matches() {
        let token = Token::parse("abcdefghijklmnopqrstuvwxyz").unwrap();
        assert!(token.matches("abcdefghijklmnopqrstuvwxyz"));
        assert!(!token.matches("abcdefghijklmnopqrstuvwxyZ"));
        assert!(!token.matches("abcdefghijklmnopqrstuvwxy"));
        assert!(!token.matches("abcdefghijklmnopqrstuvwxyzz"));
        assert!(!token.matches(""));
    }

    #[test]
    fn weak_tokens_are_refused_with_the_reason() {
        assert_eq!(Token::parse("short"), Err(TokenError::TooShort(5)));
        assert_eq!(
            Token::parse("a token with spaces in it, long enough"),
            Err(TokenError::BadCharacter)
        );
        assert_eq!(
            format!("{:?}", Token::generate()),
            "Token(<redacted>)",
            "a token never reaches a log through Debug"
        );
    }
}
