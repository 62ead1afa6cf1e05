//! The line rule the fabric's small text files share (GUID lists, `guid2lid`, the
//! isolation file, fault scripts): `#` starts a comment anywhere on a line, blank and
//! comment-only lines carry nothing, and errors name the line from 1.

/// The lines of `text` that hold something: `(line number from 1, the text before any
/// `#`, trimmed)`, skipping lines that are blank once the comment is gone.
///
/// ```
/// let text = "# header\n0x1 2  # trailing\n\n   \n3";
/// let got: Vec<_> = ibsm_topology::lines::content_lines(text).collect();
/// assert_eq!(got, [(2, "0x1 2"), (5, "3")]);
/// ```
pub fn content_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().filter_map(|(i, raw)| {
        let body = raw.split('#').next().unwrap_or("").trim();
        (!body.is_empty()).then_some((i + 1, body))
    })
}

#[cfg(test)]
mod tests {
    use super::content_lines;

    #[test]
    fn comments_and_blanks_carry_nothing() {
        let text = "#only\n\t\n a b #c\r\n#\nx#y\n";
        let got: Vec<_> = content_lines(text).collect();
        assert_eq!(got, [(3, "a b"), (5, "x")]);
    }
}
