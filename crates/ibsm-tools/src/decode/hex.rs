//! The input side of `ibsm-mad-decode`: hex text (with `#` comments) to MAD bytes.

/// Why text is not hex bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HexError {
    /// A character that is neither a hex digit nor a separator.
    #[error("not a hex digit at character {position}")]
    NotHex {
        /// Its byte offset in the text after trimming and any `0x`.
        position: usize,
    },
    /// Digits that do not pair up into bytes.
    #[error("odd number of hex digits ({digits})")]
    OddDigits {
        /// How many digits there are.
        digits: usize,
    },
}

/// Decodes hex text, ignoring whitespace, `:` and `-` separators and an optional `0x`.
///
/// # Errors
/// [`HexError`] naming the offending character position or the digit count.
pub fn parse_hex(text: &str) -> Result<Vec<u8>, HexError> {
    let text = text.trim();
    let text = text.strip_prefix("0x").unwrap_or(text);
    let digits: Vec<(usize, u8)> = text
        .char_indices()
        .filter(|(_, c)| !c.is_whitespace() && *c != ':' && *c != '-')
        .map(|(i, c)| (i, c as u32 as u8))
        .collect();
    if let Some(&(pos, _)) = digits.iter().find(|(_, c)| !c.is_ascii_hexdigit()) {
        return Err(HexError::NotHex { position: pos });
    }
    if digits.len() % 2 != 0 {
        return Err(HexError::OddDigits {
            digits: digits.len(),
        });
    }
    Ok(digits
        .chunks(2)
        .map(|p| {
            let hi = (p[0].1 as char).to_digit(16).unwrap_or(0) as u8;
            let lo = (p[1].1 as char).to_digit(16).unwrap_or(0) as u8;
            hi << 4 | lo
        })
        .collect())
}

/// Removes `#` comments (to the end of the line), so annotated hex files decode as is.
#[must_use]
pub fn strip_comments(text: &str) -> String {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}
