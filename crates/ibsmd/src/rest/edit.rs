//! The partitions file as the API edits it: its text cut into statements, each with
//! the comments and blank lines before it, so that a change rewrites only the
//! statements of its P_Key and leaves every other byte as it was.
//!
//! An add puts each GUID into the first statement with the P_Key (or changes its
//! membership where a statement of the P_Key already names it), and sets the
//! statements' `indx0` / `ipoib` flags where the request gave `index0` / `ip_over_ib`;
//! without a statement for the P_Key it appends `api_pkey_0xN=0xNNNN[, ipoib][, indx0]
//! : GUID=full, ... ;` (UFM's name for the partitions its API makes). A remove drops
//! the GUIDs from every statement of the P_Key; a statement left without members stays
//! (UFM keeps a P_Key whose last GUID went; its flags stay with it). A rewritten
//! statement is written as `Statement`'s `Display` spells it: comments inside it go.

use ibsm::manager::partition::{
    Member, MemberEntry, Membership, ParseError, PartitionConfig, Statement,
};

use super::api::Change;

/// Why the API cannot edit a partitions file.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FileError {
    /// It is not a valid partitions file.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// Its statements and their `;` do not pair up.
    #[error("{statements} statements but {semicolons} statement ends (`;`): not edited")]
    Cut {
        /// Statements the parser read.
        statements: usize,
        /// Statement ends found.
        semicolons: usize,
    },
}

/// One statement of the file and what precedes it.
#[derive(Debug, Clone)]
struct Chunk {
    /// Blank lines and comments before the statement, as written.
    lead: String,
    /// The statement's text up to and including its `;`, as written (or rewritten).
    body: String,
    /// The statement, parsed.
    stmt: Statement,
}

/// A partitions file, editable without losing what a change does not touch.
#[derive(Debug, Clone)]
pub(crate) struct PartitionFile {
    chunks: Vec<Chunk>,
    /// What follows the last statement (blank lines, comments).
    tail: String,
}

/// One GUID member of a partition, as [`PartitionFile::view`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GuidMember {
    /// The port GUID.
    pub(crate) guid: u64,
    /// `full`, `limited` or `both` (the statement's `defmember` where the entry has
    /// none).
    pub(crate) membership: &'static str,
}

/// A partition as the GET requests show it (its statements merged).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PartitionView {
    /// The first statement's name.
    pub(crate) name: String,
    /// The 15-bit P_Key.
    pub(crate) pkey: u16,
    /// `ipoib` on any of its statements.
    pub(crate) ipoib: bool,
    /// `indx0` on any of its statements.
    pub(crate) index0: bool,
    /// Its members named by GUID, in file order (keyword members such as `ALL` are
    /// not GUIDs and not listed).
    pub(crate) guids: Vec<GuidMember>,
}

/// Where each statement's text starts and ends: `(start of its lead, start of its
/// body, one past its ';')`. A `;` inside a `#` comment ends nothing.
fn cut(text: &str) -> (Vec<(usize, usize, usize)>, usize) {
    let mut out = Vec::new();
    let (mut lead_at, mut body_at) = (0usize, None::<usize>);
    let mut comment = false;
    for (i, c) in text.char_indices() {
        if comment {
            comment = c != '\n';
            continue;
        }
        match c {
            '#' => comment = true,
            ';' => {
                let body = body_at.take().unwrap_or(i);
                out.push((lead_at, body, i + 1));
                lead_at = i + 1;
            }
            c if c.is_whitespace() => {}
            _ => {
                body_at.get_or_insert(i);
            }
        }
    }
    (out, lead_at)
}

impl PartitionFile {
    /// Reads a partitions file's text.
    ///
    /// # Errors
    /// [`FileError::Parse`] (line and column in the whole text) when it is not a valid
    /// partitions file.
    pub(crate) fn parse(text: &str) -> Result<Self, FileError> {
        // The whole text first: its errors name lines of the file.
        let all = PartitionConfig::parse(text)?;
        let (spans, tail_at) = cut(text);
        // Each statement ends at its one `;` for the parser too; were that ever not
        // so, an edit would rewrite the wrong text.
        if spans.len() != all.statements.len() {
            return Err(FileError::Cut {
                statements: all.statements.len(),
                semicolons: spans.len(),
            });
        }
        let mut chunks = Vec::with_capacity(spans.len());
        for ((lead, body, end), stmt) in spans.into_iter().zip(all.statements) {
            chunks.push(Chunk {
                lead: text[lead..body].to_owned(),
                body: text[body..end].to_owned(),
                stmt,
            });
        }
        Ok(Self {
            chunks,
            tail: text[tail_at..].to_owned(),
        })
    }

    /// The file's text.
    pub(crate) fn render(&self) -> String {
        let mut s = String::new();
        for c in &self.chunks {
            s.push_str(&c.lead);
            s.push_str(&c.body);
        }
        s.push_str(&self.tail);
        s
    }

    /// Applies `change`; whether the file changed (an add of members already there
    /// with that membership and those flags, or a remove of non-members, changes
    /// nothing).
    pub(crate) fn apply(&mut self, change: &Change) -> bool {
        let pkey = change.pkey();
        let ours: Vec<usize> = (0..self.chunks.len())
            .filter(|&i| self.chunks[i].stmt.pkey == Some(pkey))
            .collect();
        let mut dirty = vec![false; self.chunks.len()];
        match change {
            Change::Add {
                guids,
                membership,
                index0,
                ip_over_ib,
                ..
            } => {
                let m = *membership;
                let Some(&first) = ours.first() else {
                    self.append(pkey, guids, m, *index0, *ip_over_ib);
                    return true;
                };
                for &g in guids {
                    // Every entry naming it (the parser merges a port named twice
                    // into the stronger membership, so all must say the new one).
                    let mut named = false;
                    for &i in &ours {
                        for e in &mut self.chunks[i].stmt.members {
                            if e.member == Member::Guid(g) {
                                named = true;
                                if e.membership != Some(m) {
                                    e.membership = Some(m);
                                    dirty[i] = true;
                                }
                            }
                        }
                    }
                    if !named {
                        self.chunks[first].stmt.members.push(MemberEntry {
                            member: Member::Guid(g),
                            membership: Some(m),
                        });
                        dirty[first] = true;
                    }
                }
                for &i in &ours {
                    let f = &mut self.chunks[i].stmt.flags;
                    for (flag, want) in [(&mut f.indx0, index0), (&mut f.ipoib, ip_over_ib)] {
                        if let Some(v) = *want {
                            if *flag != v {
                                *flag = v;
                                dirty[i] = true;
                            }
                        }
                    }
                }
            }
            Change::Remove { guids, .. } => {
                for &i in &ours {
                    let members = &mut self.chunks[i].stmt.members;
                    let before = members.len();
                    members.retain(|e| !matches!(e.member, Member::Guid(g) if guids.contains(&g)));
                    dirty[i] = members.len() != before;
                }
            }
        }
        for (c, _) in self.chunks.iter_mut().zip(&dirty).filter(|(_, d)| **d) {
            c.body = c.stmt.to_string();
        }
        dirty.contains(&true)
    }

    /// A new statement for `pkey` at the end of the file.
    fn append(
        &mut self,
        pkey: u16,
        guids: &[u64],
        m: Membership,
        index0: Option<bool>,
        ip_over_ib: Option<bool>,
    ) {
        let mut stmt = Statement {
            name: format!("api_pkey_{pkey:#x}"),
            pkey: Some(pkey),
            flags: Default::default(),
            members: guids
                .iter()
                .map(|&g| MemberEntry {
                    member: Member::Guid(g),
                    membership: Some(m),
                })
                .collect(),
            mgroups: Vec::new(),
        };
        // UFM's defaults: IPoIB on, not at index 0.
        stmt.flags.ipoib = ip_over_ib.unwrap_or(true);
        stmt.flags.indx0 = index0.unwrap_or(false);
        // On a line of its own, after whatever ended the file.
        let text = self.render();
        let lead = if text.is_empty() || text.ends_with('\n') {
            String::new()
        } else {
            "\n".to_owned()
        };
        let tail = std::mem::take(&mut self.tail);
        // The old tail (comments after the last statement) stays before the new one.
        self.chunks.push(Chunk {
            lead: tail + &lead,
            body: stmt.to_string(),
            stmt,
        });
        self.tail = "\n".into();
    }

    /// The policy the file holds.
    pub(crate) fn config(&self) -> PartitionConfig {
        let mut cfg = PartitionConfig::opensm_default();
        cfg.statements = self.chunks.iter().map(|c| c.stmt.clone()).collect();
        cfg
    }

    /// Every partition with an explicit P_Key, in file order of first appearance.
    pub(crate) fn views(&self) -> Vec<PartitionView> {
        let mut out: Vec<PartitionView> = Vec::new();
        for c in &self.chunks {
            let Some(pkey) = c.stmt.pkey else { continue };
            let i = match out.iter().position(|v| v.pkey == pkey) {
                Some(i) => i,
                None => {
                    out.push(PartitionView {
                        name: c.stmt.name.clone(),
                        pkey,
                        ipoib: false,
                        index0: false,
                        guids: Vec::new(),
                    });
                    out.len() - 1
                }
            };
            let v = &mut out[i];
            v.ipoib |= c.stmt.flags.ipoib;
            v.index0 |= c.stmt.flags.indx0;
            let def = c.stmt.flags.defmember.unwrap_or(Membership::Limited);
            for e in &c.stmt.members {
                if let Member::Guid(guid) = e.member {
                    let ms = e.membership.unwrap_or(def);
                    // Named twice: the stronger membership, as the policy reads it.
                    match v.guids.iter_mut().find(|m| m.guid == guid) {
                        Some(m) if ms.word() != m.membership && ms == Membership::Both => {
                            m.membership = ms.word();
                        }
                        Some(m) if ms == Membership::Full && m.membership == "limited" => {
                            m.membership = ms.word();
                        }
                        Some(_) => {}
                        None => v.guids.push(GuidMember {
                            guid,
                            membership: ms.word(),
                        }),
                    }
                }
            }
        }
        out
    }

    /// The partition with 15-bit P_Key `pkey`, if a statement has it.
    pub(crate) fn view(&self, pkey: u16) -> Option<PartitionView> {
        self.views().into_iter().find(|v| v.pkey == pkey)
    }
}
