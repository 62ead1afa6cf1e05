//! The partition file parser: a tokenizer that remembers where every token starts,
//! and a recursive-descent reader of statements over it.

use std::fmt;

use super::{
    DEFAULT_PKEY, FULL_MEMBER, Flags, GroupFlags, McGroup, Member, MemberEntry, Membership,
    Statement,
};

/// What is wrong with a partition file.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// A P_Key that is not a number in 0x0001..=0x7FFF.
    BadPKey,
    /// P_Key 0x0000 or 0x8000: the invalid (empty slot) P_Key.
    ReservedPKey,
    /// A P_Key with the membership bit 0x8000 set (such as 0xFFFF): membership is
    /// given per member (`=full`), the P_Key is the low 15 bits.
    MembershipBitInPKey,
    /// A member that is neither a keyword (`ALL`, `ALL_CAS`, `ALL_SWITCHES`,
    /// `ALL_ROUTERS`, `SELF`) nor a number.
    UnknownMember,
    /// A port GUID that is not a non-zero 64-bit number.
    BadGuid,
    /// A membership other than `full`, `limited` or `both`.
    BadMembership,
    /// A flag this parser does not know.
    UnknownFlag,
    /// A flag value out of range or not a number (or a value on a flag that takes
    /// none).
    BadFlagValue,
    /// The `:` between the definition and the member list is missing.
    MissingColon,
    /// The `;` ending a statement is missing.
    MissingSemicolon,
    /// A token where something else was expected.
    Unexpected {
        /// What was expected.
        expected: &'static str,
    },
    /// An `mgid=` value that is not an IPv6 address.
    BadMgid,
    /// An `mgid=` that is not a multicast GID (first byte not 0xFF).
    NotMulticast,
    /// An IP multicast group (signature 0x401B/0x601B) whose MGID carries another
    /// partition's P_Key (write the partition's, or 0 to have it filled in).
    MgidPKeyMismatch {
        /// The partition's P_Key, with the full-member bit.
        pkey: u16,
    },
    /// An IP multicast group whose `mtu` or `rate` differs from the partition's IPoIB
    /// broadcast group (as in OpenSM, they must match).
    IpGroupMismatch {
        /// `mtu` or `rate`.
        flag: &'static str,
        /// The broadcast group's value.
        broadcast: u8,
    },
    /// A flag a multicast group line does not take (`ipoib`, `indx0`, `defmember`, or
    /// an unknown one).
    UnknownGroupFlag,
}

/// A syntax or value error in a partition file: where, which token, and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line of the token.
    pub line: usize,
    /// 1-based column (in characters) of the token's first character.
    pub column: usize,
    /// The offending token (empty at the end of the input).
    pub token: String,
    /// What is wrong.
    pub kind: ParseErrorKind,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}: ", self.line, self.column)?;
        let t = &self.token;
        match &self.kind {
            ParseErrorKind::BadPKey => write!(f, "`{t}` is not a P_Key (0x0001..=0x7fff)"),
            ParseErrorKind::ReservedPKey => {
                write!(f, "P_Key `{t}` is the invalid P_Key (0x0000/0x8000)")
            }
            ParseErrorKind::MembershipBitInPKey => write!(
                f,
                "P_Key `{t}` has the membership bit 0x8000 set: write the 15-bit P_Key and give membership per member (`=full`)"
            ),
            ParseErrorKind::UnknownMember => write!(
                f,
                "unknown member `{t}` (expected a port GUID, ALL, ALL_CAS, ALL_SWITCHES, ALL_ROUTERS or SELF)"
            ),
            ParseErrorKind::BadGuid => write!(f, "`{t}` is not a port GUID (non-zero, 64 bits)"),
            ParseErrorKind::BadMembership => write!(
                f,
                "unknown membership `{t}` (expected full, limited or both)"
            ),
            ParseErrorKind::UnknownFlag => write!(
                f,
                "unknown flag `{t}` (expected ipoib, indx0, mtu, rate, sl, scope, Q_Key, TClass, FlowLabel or defmember)"
            ),
            ParseErrorKind::BadFlagValue => write!(f, "bad flag value `{t}`"),
            ParseErrorKind::MissingColon => write!(
                f,
                "expected `:` between the partition definition and its members, found {}",
                shown(t)
            ),
            ParseErrorKind::MissingSemicolon => {
                write!(f, "expected `,` or `;` after a member, found {}", shown(t))
            }
            ParseErrorKind::Unexpected { expected } => {
                write!(f, "expected {expected}, found {}", shown(t))
            }
            ParseErrorKind::BadMgid => write!(f, "`{t}` is not an MGID (an IPv6 address)"),
            ParseErrorKind::NotMulticast => {
                write!(f, "MGID `{t}` is not multicast (must start with ff)")
            }
            ParseErrorKind::MgidPKeyMismatch { pkey } => write!(
                f,
                "IP multicast group `{t}` carries another P_Key than its partition's {pkey:#06x} (write it, or 0 to fill it in)"
            ),
            ParseErrorKind::IpGroupMismatch { flag, broadcast } => write!(
                f,
                "IP multicast group {flag} `{t}` differs from the partition's broadcast group {flag} {broadcast}"
            ),
            ParseErrorKind::UnknownGroupFlag => write!(
                f,
                "unknown multicast group flag `{t}` (expected mtu, rate, sl, scope, Q_Key, TClass or FlowLabel)"
            ),
        }
    }
}

fn shown(t: &str) -> String {
    if t.is_empty() {
        "the end of the file".into()
    } else {
        format!("`{t}`")
    }
}

impl std::error::Error for ParseError {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok<'a> {
    Word(&'a str),
    Eq,
    Comma,
    Colon,
    Semi,
}

#[derive(Debug, Clone, Copy)]
struct Token<'a> {
    tok: Tok<'a>,
    line: usize,
    column: usize,
    text: &'a str,
    /// Byte offset in the source.
    offset: usize,
}

fn is_delim(c: char) -> bool {
    matches!(c, '=' | ',' | ':' | ';' | '#')
}

/// Splits the text into tokens; `#` to the end of the line is a comment. Returns the
/// tokens and the position just past the end.
fn tokenize(text: &str) -> (Vec<Token<'_>>, (usize, usize)) {
    let mut out = Vec::new();
    let (mut line, mut column) = (1usize, 1usize);
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let (l, col) = (line, column);
        if c == '\n' {
            line += 1;
            column = 1;
            continue;
        }
        column += 1;
        if c == '#' {
            while let Some(&(_, c)) = chars.peek() {
                if c == '\n' {
                    break;
                }
                chars.next();
                column += 1;
            }
            continue;
        }
        if c.is_whitespace() {
            continue;
        }
        let tok = match c {
            '=' => Some(Tok::Eq),
            ',' => Some(Tok::Comma),
            ':' => Some(Tok::Colon),
            ';' => Some(Tok::Semi),
            _ => None,
        };
        if let Some(tok) = tok {
            out.push(Token {
                tok,
                line: l,
                column: col,
                text: &text[i..i + c.len_utf8()],
                offset: i,
            });
            continue;
        }
        let mut end = i + c.len_utf8();
        while let Some(&(j, c)) = chars.peek() {
            if c.is_whitespace() || is_delim(c) {
                break;
            }
            end = j + c.len_utf8();
            chars.next();
            column += 1;
        }
        let w = &text[i..end];
        out.push(Token {
            tok: Tok::Word(w),
            line: l,
            column: col,
            text: w,
            offset: i,
        });
    }
    (out, (line, column))
}

struct Parser<'a> {
    src: &'a str,
    toks: Vec<Token<'a>>,
    at: usize,
    end: (usize, usize),
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<Tok<'a>> {
        self.toks.get(self.at).map(|t| t.tok)
    }

    fn error(&self, kind: ParseErrorKind) -> ParseError {
        match self.toks.get(self.at) {
            Some(t) => error_at(t, kind),
            None => ParseError {
                line: self.end.0,
                column: self.end.1,
                token: String::new(),
                kind,
            },
        }
    }

    /// The next token, which must be a word.
    fn word(&mut self, expected: &'static str) -> Result<Token<'a>, ParseError> {
        match self.toks.get(self.at) {
            Some(t) if matches!(t.tok, Tok::Word(_)) => {
                self.at += 1;
                Ok(*t)
            }
            _ => Err(self.error(ParseErrorKind::Unexpected { expected })),
        }
    }

    fn eat(&mut self, tok: Tok<'_>) -> bool {
        if self.peek() == Some(tok) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn statement(&mut self) -> Result<Statement, ParseError> {
        // Name: the words before `=`, `,` or `:`.
        let mut words = Vec::new();
        while let Some(Tok::Word(w)) = self.peek() {
            words.push(w);
            self.at += 1;
        }
        let name = words.join(" ");
        let pkey = if self.eat(Tok::Eq) {
            let t = self.word("a P_Key")?;
            Some(pkey(&t)?)
        } else {
            None
        };
        let mut flags = Flags::default();
        while self.eat(Tok::Comma) {
            let name = self.word("a flag")?;
            let value = if self.eat(Tok::Eq) {
                Some(self.word("a flag value")?)
            } else {
                None
            };
            flag(&mut flags, &name, value.as_ref())?;
        }
        if !self.eat(Tok::Colon) {
            let kind = if words.is_empty() && pkey.is_none() && self.peek() != Some(Tok::Comma) {
                ParseErrorKind::Unexpected {
                    expected: "a partition definition",
                }
            } else {
                ParseErrorKind::MissingColon
            };
            return Err(self.error(kind));
        }
        let mut members = Vec::new();
        let mut mgroups = Vec::new();
        // The partition's P_Key when known now (IP groups are checked against it).
        let known = pkey.or_else(|| (name == "Default").then_some(DEFAULT_PKEY));
        if !self.eat(Tok::Semi) {
            loop {
                let t = self.word("a member")?;
                if member_is_mgid(&t) && self.peek() == Some(Tok::Eq) {
                    // A group line ends at the end of its line: what follows on the
                    // next line needs no comma.
                    mgroups.push(self.mgroup(&t, &flags.group, known)?);
                    if self.eat(Tok::Semi) {
                        break;
                    }
                    if self.toks.get(self.at).is_some_and(|n| n.line > t.line) {
                        self.eat(Tok::Comma);
                        continue;
                    }
                    return Err(self.error(ParseErrorKind::MissingSemicolon));
                }
                let member = member(&t)?;
                let membership = if self.eat(Tok::Eq) {
                    let m = self.word("full, limited or both")?;
                    Some(membership(&m)?)
                } else {
                    None
                };
                members.push(MemberEntry { member, membership });
                if self.eat(Tok::Semi) {
                    break;
                }
                if !self.eat(Tok::Comma) {
                    // A group line may follow a member on the next line.
                    let next_line_mgid = self.toks.get(self.at).is_some_and(|n| {
                        n.line > t.line
                            && member_is_mgid(n)
                            && self.toks.get(self.at + 1).map(|e| e.tok) == Some(Tok::Eq)
                    });
                    if next_line_mgid {
                        continue;
                    }
                    return Err(self.error(ParseErrorKind::MissingSemicolon));
                }
            }
        }
        Ok(Statement {
            name,
            pkey,
            flags,
            members,
            mgroups,
        })
    }

    /// A group line after its `mgid` word: `= GID` and `, flag=value` pairs up to the
    /// end of the line.
    fn mgroup(
        &mut self,
        kw: &Token<'a>,
        part: &GroupFlags,
        pkey: Option<u16>,
    ) -> Result<McGroup, ParseError> {
        self.eat(Tok::Eq);
        // The GID's colons are delimiters to the tokenizer: take the run of words and
        // colons that touch each other.
        let Some(first) = self.toks.get(self.at).copied() else {
            return Err(self.error(ParseErrorKind::Unexpected {
                expected: "an MGID",
            }));
        };
        if !matches!(first.tok, Tok::Word(_) | Tok::Colon) || first.line != kw.line {
            return Err(self.error(ParseErrorKind::Unexpected {
                expected: "an MGID",
            }));
        }
        let mut end = first.offset + first.text.len();
        self.at += 1;
        while let Some(t) = self.toks.get(self.at) {
            if t.offset != end || !matches!(t.tok, Tok::Word(_) | Tok::Colon) {
                break;
            }
            end = t.offset + t.text.len();
            self.at += 1;
        }
        let text = &self.src[first.offset..end];
        let gid_tok = Token {
            tok: Tok::Word(text),
            text,
            ..first
        };
        let mgid: std::net::Ipv6Addr = text
            .parse()
            .map_err(|_| error_at(&gid_tok, ParseErrorKind::BadMgid))?;
        if mgid.octets()[0] != 0xFF {
            return Err(error_at(&gid_tok, ParseErrorKind::NotMulticast));
        }
        let mut g = McGroup::new(mgid);
        let (mut mtu_at, mut rate_at) = (None, None);
        while self.peek() == Some(Tok::Comma)
            && self.toks.get(self.at).is_some_and(|c| c.line == kw.line)
        {
            self.at += 1;
            let name = self.word("a multicast group flag")?;
            let value = if self.eat(Tok::Eq) {
                Some(self.word("a flag value")?)
            } else {
                None
            };
            let known = group_flag(&mut g.flags, &name, value.as_ref())?;
            if !known {
                return Err(error_at(&name, ParseErrorKind::UnknownGroupFlag));
            }
            match name.text.to_ascii_lowercase().as_str() {
                "mtu" => mtu_at = value,
                "rate" => rate_at = value,
                _ => {}
            }
        }
        if g.is_ip() {
            let o = mgid.octets();
            let bits = u16::from_be_bytes([o[4], o[5]]);
            if let Some(k) = pkey
                && bits != 0
                && bits != k | FULL_MEMBER
            {
                return Err(error_at(
                    &gid_tok,
                    ParseErrorKind::MgidPKeyMismatch {
                        pkey: k | FULL_MEMBER,
                    },
                ));
            }
            for (flag, at, got, part, default) in [
                ("mtu", mtu_at, g.flags.mtu, part.mtu, 4),
                ("rate", rate_at, g.flags.rate, part.rate, 3),
            ] {
                let broadcast = part.unwrap_or(default);
                if let (Some(at), Some(v)) = (at, got)
                    && v != broadcast
                {
                    return Err(error_at(
                        &at,
                        ParseErrorKind::IpGroupMismatch { flag, broadcast },
                    ));
                }
            }
        }
        Ok(g)
    }
}

fn error_at(t: &Token<'_>, kind: ParseErrorKind) -> ParseError {
    ParseError {
        line: t.line,
        column: t.column,
        token: t.text.to_owned(),
        kind,
    }
}

fn member_is_mgid(t: &Token<'_>) -> bool {
    t.text.eq_ignore_ascii_case("mgid")
}

/// A number as OpenSM reads them: `0x` hexadecimal or decimal.
fn number(s: &str) -> Option<u64> {
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        if h.is_empty() || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u64::from_str_radix(h, 16).ok()
    } else {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    }
}

fn pkey(t: &Token<'_>) -> Result<u16, ParseError> {
    let v = number(t.text)
        .and_then(|v| u16::try_from(v).ok())
        .ok_or_else(|| error_at(t, ParseErrorKind::BadPKey))?;
    if v & !FULL_MEMBER == 0 {
        return Err(error_at(t, ParseErrorKind::ReservedPKey));
    }
    if v & FULL_MEMBER != 0 {
        return Err(error_at(t, ParseErrorKind::MembershipBitInPKey));
    }
    debug_assert!(v <= DEFAULT_PKEY);
    Ok(v)
}

fn member(t: &Token<'_>) -> Result<Member, ParseError> {
    let w = t.text;
    let kw = [
        ("ALL", Member::All),
        ("ALL_CAS", Member::AllCas),
        ("ALL_SWITCHES", Member::AllSwitches),
        ("ALL_ROUTERS", Member::AllRouters),
        ("SELF", Member::SelfPort),
    ];
    if let Some((_, m)) = kw.iter().find(|(k, _)| w.eq_ignore_ascii_case(k)) {
        return Ok(*m);
    }
    if !w.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(error_at(t, ParseErrorKind::UnknownMember));
    }
    match number(w) {
        Some(g) if g != 0 => Ok(Member::Guid(g)),
        _ => Err(error_at(t, ParseErrorKind::BadGuid)),
    }
}

fn membership(t: &Token<'_>) -> Result<Membership, ParseError> {
    let w = t.text;
    [
        ("full", Membership::Full),
        ("limited", Membership::Limited),
        ("both", Membership::Both),
    ]
    .iter()
    .find(|(k, _)| w.eq_ignore_ascii_case(k))
    .map(|(_, m)| *m)
    .ok_or_else(|| error_at(t, ParseErrorKind::BadMembership))
}

fn flag(flags: &mut Flags, name: &Token<'_>, value: Option<&Token<'_>>) -> Result<(), ParseError> {
    let bare = |set: &mut bool| -> Result<(), ParseError> {
        if let Some(v) = value {
            return Err(error_at(v, ParseErrorKind::BadFlagValue));
        }
        *set = true;
        Ok(())
    };
    match name.text.to_ascii_lowercase().as_str() {
        "ipoib" => bare(&mut flags.ipoib)?,
        "indx0" => bare(&mut flags.indx0)?,
        "defmember" => {
            let v = value.ok_or_else(|| error_at(name, ParseErrorKind::BadFlagValue))?;
            flags.defmember = Some(membership(v)?);
        }
        _ => {
            if !group_flag(&mut flags.group, name, value)? {
                return Err(error_at(name, ParseErrorKind::UnknownFlag));
            }
        }
    }
    Ok(())
}

/// Sets the multicast group flag `name` (a statement's or a group line's); false when
/// `name` is not one.
fn group_flag(
    g: &mut GroupFlags,
    name: &Token<'_>,
    value: Option<&Token<'_>>,
) -> Result<bool, ParseError> {
    // A number flag in `lo..=hi`.
    let num = |lo: u64, hi: u64| -> Result<u64, ParseError> {
        let v = value.ok_or_else(|| error_at(name, ParseErrorKind::BadFlagValue))?;
        number(v.text)
            .filter(|x| (lo..=hi).contains(x))
            .ok_or_else(|| error_at(v, ParseErrorKind::BadFlagValue))
    };
    match name.text.to_ascii_lowercase().as_str() {
        "mtu" => g.mtu = Some(num(1, 5)? as u8),
        "rate" => g.rate = Some(num(2, 63)? as u8),
        "sl" => g.sl = Some(num(0, 15)? as u8),
        "scope" => {
            let s = num(1, 15)? as u8;
            if !g.scope.contains(&s) {
                g.scope.push(s);
            }
        }
        "q_key" => g.q_key = Some(num(0, u64::from(u32::MAX))? as u32),
        "tclass" => g.tclass = Some(num(0, 255)? as u8),
        "flowlabel" => g.flow_label = Some(num(0, 0xF_FFFF)? as u32),
        _ => return Ok(false),
    }
    Ok(true)
}

/// Parses every statement of a partition file.
pub(super) fn statements(text: &str) -> Result<Vec<Statement>, ParseError> {
    let (toks, end) = tokenize(text);
    let mut p = Parser {
        src: text,
        toks,
        at: 0,
        end,
    };
    let mut out = Vec::new();
    while p.at < p.toks.len() {
        out.push(p.statement()?);
    }
    Ok(out)
}
