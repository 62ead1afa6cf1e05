//! Small helpers shared by the ibsm examples (argument and hex handling).
//!
//! The examples themselves live next to this crate's `Cargo.toml`, e.g.
//! `cargo run --example mad_decode -- <hex>`. The decoding logic of `mad_decode` lives in
//! [`decode`] so it is unit tested.
//!
//! ```
//! let mad = ibsm_examples::parse_hex("01 81 01 01 00 00 00 00  00 00 00 00 00 00 00 01  00 11 00 00 00 00 00 00")?;
//! assert_eq!(mad.len(), 24);
//! # Ok::<(), String>(())
//! ```

pub mod decode;

/// Decodes hex text, ignoring whitespace, `:` and `-` separators and an optional `0x`.
///
/// # Errors
/// A one-line message naming the offending character position.
pub fn parse_hex(text: &str) -> Result<Vec<u8>, String> {
    let text = text.trim();
    let text = text.strip_prefix("0x").unwrap_or(text);
    let digits: Vec<(usize, u8)> = text
        .char_indices()
        .filter(|(_, c)| !c.is_whitespace() && *c != ':' && *c != '-')
        .map(|(i, c)| (i, c as u32 as u8))
        .collect();
    if let Some(&(pos, _)) = digits.iter().find(|(_, c)| !c.is_ascii_hexdigit()) {
        return Err(format!("not a hex digit at character {pos}"));
    }
    if !digits.len().is_multiple_of(2) {
        return Err(format!("odd number of hex digits ({})", digits.len()));
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

#[cfg(test)]
mod tests {
    use super::parse_hex;

    #[test]
    fn hex() {
        assert_eq!(
            parse_hex("01 81\n0a:FF").unwrap(),
            vec![1, 0x81, 0x0a, 0xff]
        );
        assert_eq!(parse_hex("0x0102").unwrap(), vec![1, 2]);
        assert!(parse_hex("0g").unwrap_err().contains("character 1"));
        assert!(parse_hex("012").unwrap_err().contains("odd"));
    }
}
