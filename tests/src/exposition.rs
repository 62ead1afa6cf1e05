//! A reader of the Prometheus / OpenMetrics text exposition format, for tests that
//! check what a metrics endpoint or textfile holds (ibsmd's `/metrics`, `ibsm-exporter`).
//!
//! It reads what those write: `# TYPE name kind` lines, samples
//! `name{label="value",...} value [timestamp]` with the format's escapes in label values
//! (`\\`, `\"`, `\n`), blank lines, and other `#` lines (`# HELP`, `# UNIT`, `# EOF`),
//! which it passes over. Anything else is an [`ExpositionError`] naming the line, so a
//! malformed exposition fails the test that reads it with the line to look at.
//!
//! ```
//! use ibsm_tests::exposition::Exposition;
//!
//! let text = "# TYPE ibsm_sweeps counter\nibsm_sweeps_total{kind=\"heavy\"} 2\n# EOF\n";
//! let exp = Exposition::parse(text)?;
//! assert_eq!(exp.kind("ibsm_sweeps"), Some("counter"));
//! assert_eq!(exp.get("ibsm_sweeps_total", &[("kind", "heavy")]), Some(2.0));
//! assert_eq!(exp.get("ibsm_sweeps_total", &[]), None);
//! # Ok::<(), ibsm_tests::exposition::ExpositionError>(())
//! ```

use std::collections::BTreeMap;

/// One sample: a metric name, its labels and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The sample's name (`ibsm_sweeps_total`, not the family `ibsm_sweeps`).
    pub name: String,
    /// Its labels, by name.
    pub labels: BTreeMap<String, String>,
    /// Its value.
    pub value: f64,
}

/// What an exposition holds: each family's declared kind and every sample, in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Exposition {
    /// Family name -> kind (`counter`, `gauge`, ...), from the `# TYPE` lines.
    pub types: BTreeMap<String, String>,
    /// Every sample, in the order written.
    pub samples: Vec<Sample>,
}

/// A line that is not the exposition format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("exposition line {line}: {what}: {text:?}")]
pub struct ExpositionError {
    /// The line number, from 1.
    pub line: usize,
    /// What is wrong with it.
    pub what: Malformed,
    /// The line itself.
    pub text: String,
}

/// What is wrong with a malformed line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Malformed {
    /// A `# TYPE` line without both a family name and a kind.
    #[error("`# TYPE` wants a name and a kind")]
    Type,
    /// A sample or family name that is empty or has a character names may not have.
    #[error("bad metric name")]
    Name,
    /// A label that is not `name="value"`.
    #[error("bad label")]
    Label,
    /// A label set without its closing `}`.
    #[error("no closing brace")]
    Brace,
    /// A label value without its closing quote, or with an unknown escape.
    #[error("bad quoted label value")]
    Quote,
    /// No value, a value that is not a number, or more than a value and a timestamp.
    #[error("bad sample value")]
    Value,
}

impl Exposition {
    /// Reads an exposition.
    ///
    /// # Errors
    /// The first line that is not the format: which line, what is wrong, its text.
    pub fn parse(text: &str) -> Result<Self, ExpositionError> {
        let mut exp = Self::default();
        for (i, line) in text.lines().enumerate() {
            let fail = |what| ExpositionError {
                line: i + 1,
                what,
                text: line.to_owned(),
            };
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let mut words = rest.split_whitespace();
                let (Some(name), Some(kind), None) = (words.next(), words.next(), words.next())
                else {
                    return Err(fail(Malformed::Type));
                };
                if !is_metric_name(name) {
                    return Err(fail(Malformed::Name));
                }
                exp.types.insert(name.to_owned(), kind.to_owned());
            } else if !line.starts_with('#') && !line.trim().is_empty() {
                exp.samples.push(sample(line).map_err(fail)?);
            }
        }
        Ok(exp)
    }

    /// The kind the `# TYPE` line of `family` declares.
    #[must_use]
    pub fn kind(&self, family: &str) -> Option<&str> {
        self.types.get(family).map(String::as_str)
    }

    /// The samples called `name`, in order.
    pub fn named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Sample> + 'a {
        self.samples.iter().filter(move |s| s.name == name)
    }

    /// The value of the sample called `name` whose labels are exactly `labels`.
    #[must_use]
    pub fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let want: BTreeMap<String, String> = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        self.named(name).find(|s| s.labels == want).map(|s| s.value)
    }

    /// [`Exposition::get`] for a sample the test needs.
    ///
    /// # Panics
    /// When there is no such sample; the message lists the samples there are.
    #[must_use]
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.get(name, labels)
            .unwrap_or_else(|| panic!("no sample {name}{labels:?} in {:?}", self.samples))
    }
}

/// A metric name: `[a-zA-Z_:][a-zA-Z0-9_:]*`.
fn is_metric_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// A label name: `[a-zA-Z_][a-zA-Z0-9_]*`.
fn is_label_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// One sample line: `name`, optional `{labels}`, value, optional timestamp.
fn sample(line: &str) -> Result<Sample, Malformed> {
    let end = line.find(['{', ' ', '\t']).unwrap_or(line.len());
    let (name, mut rest) = line.split_at(end);
    if !is_metric_name(name) {
        return Err(Malformed::Name);
    }
    let mut labels = BTreeMap::new();
    if let Some(body) = rest.strip_prefix('{') {
        rest = body;
        loop {
            rest = rest.trim_start_matches([' ', ',']);
            if let Some(after) = rest.strip_prefix('}') {
                rest = after;
                break;
            }
            if rest.is_empty() {
                return Err(Malformed::Brace);
            }
            let (key, after) = rest.split_once('=').ok_or(Malformed::Label)?;
            let key = key.trim();
            if !is_label_name(key) {
                return Err(Malformed::Label);
            }
            let after = after.strip_prefix('"').ok_or(Malformed::Label)?;
            let (value, after) = quoted(after)?;
            labels.insert(key.to_owned(), value);
            rest = after;
            if !rest.starts_with([',', '}', ' ']) {
                return Err(if rest.is_empty() {
                    Malformed::Brace
                } else {
                    Malformed::Label
                });
            }
        }
    }
    // Names and label sets are followed by white space, then the value.
    if !rest.starts_with([' ', '\t']) {
        return Err(Malformed::Value);
    }
    let mut words = rest.split_whitespace();
    let value = words.next().ok_or(Malformed::Value)?;
    let value: f64 = value.parse().map_err(|_| Malformed::Value)?;
    if let Some(ts) = words.next() {
        ts.parse::<f64>().map_err(|_| Malformed::Value)?;
    }
    if words.next().is_some() {
        return Err(Malformed::Value);
    }
    Ok(Sample {
        name: name.to_owned(),
        labels,
        value,
    })
}

/// A label value after its opening quote: the value unescaped and what follows the
/// closing quote.
fn quoted(s: &str) -> Result<(String, &str), Malformed> {
    let mut out = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Ok((out, &s[i + 1..])),
            '\\' => match chars.next() {
                Some((_, '\\')) => out.push('\\'),
                Some((_, '"')) => out.push('"'),
                Some((_, 'n')) => out.push('\n'),
                _ => return Err(Malformed::Quote),
            },
            c => out.push(c),
        }
    }
    Err(Malformed::Quote)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "\
# HELP ibsm_role The SM's role.
# TYPE ibsm_role gauge
ibsm_role{role=\"MASTER\"} 1
ibsm_role{role=\"STANDBY\"} 0

# TYPE infiniband_switch_port_transmit_data_bytes counter
infiniband_switch_port_transmit_data_bytes_total{guid=\"0x10\",port=\"3\"} 400 1700000000.5
ibsm_up 1.5e0
weird{a=\"x,y\",b=\"say \\\"hi\\\"\\\\\\n\",} -Inf
# EOF
";

    #[test]
    fn reads_types_samples_labels_and_escapes() {
        let exp = Exposition::parse(GOOD).unwrap();
        assert_eq!(exp.kind("ibsm_role"), Some("gauge"));
        assert_eq!(
            exp.kind("infiniband_switch_port_transmit_data_bytes"),
            Some("counter")
        );
        assert_eq!(exp.types.len(), 2);
        assert_eq!(exp.samples.len(), 5);
        assert_eq!(exp.value("ibsm_role", &[("role", "MASTER")]), 1.0);
        assert_eq!(exp.value("ibsm_role", &[("role", "STANDBY")]), 0.0);
        // Labels must match exactly, not as a subset.
        assert_eq!(exp.get("ibsm_role", &[]), None);
        let sw = [("guid", "0x10"), ("port", "3")];
        assert_eq!(
            exp.value("infiniband_switch_port_transmit_data_bytes_total", &sw),
            400.0
        );
        assert_eq!(exp.value("ibsm_up", &[]), 1.5);
        let w = exp.named("weird").next().unwrap();
        assert_eq!(w.labels["a"], "x,y");
        assert_eq!(w.labels["b"], "say \"hi\"\\\n");
        assert_eq!(w.value, f64::NEG_INFINITY);
        assert_eq!(exp.named("ibsm_role").count(), 2);
    }

    #[test]
    fn an_empty_text_has_nothing() {
        assert_eq!(Exposition::parse("").unwrap(), Exposition::default());
        assert_eq!(Exposition::parse("# EOF\n").unwrap(), Exposition::default());
    }

    #[test]
    fn malformed_lines_are_typed_errors_with_their_line() {
        let cases: &[(&str, Malformed)] = &[
            ("# TYPE lonely", Malformed::Type),
            ("# TYPE a counter extra", Malformed::Type),
            ("# TYPE 9a counter", Malformed::Name),
            ("9lives 1", Malformed::Name),
            ("bad-name 1", Malformed::Name),
            ("{a=\"b\"} 1", Malformed::Name),
            ("m{a=\"b\" 1", Malformed::Label),
            ("m{a=\"b\"", Malformed::Brace),
            ("m{a=\"b\",", Malformed::Brace),
            ("m{a=b} 1", Malformed::Label),
            ("m{=\"b\"} 1", Malformed::Label),
            ("m{a} 1", Malformed::Label),
            ("m{a=\"b} 1", Malformed::Quote),
            ("m{a=\"\\q\"} 1", Malformed::Quote),
            ("m{a=\"b\"}x 1", Malformed::Value),
            ("m", Malformed::Value),
            ("m ", Malformed::Value),
            ("m{a=\"b\"}", Malformed::Value),
            ("m{a=\"b\"}1", Malformed::Value),
            ("m one", Malformed::Value),
            ("m 1 2 3", Malformed::Value),
            ("m 1 later", Malformed::Value),
        ];
        for &(line, what) in cases {
            let text = format!("# TYPE m gauge\nm 0\n{line}\nm 2\n");
            let e = Exposition::parse(&text).unwrap_err();
            assert_eq!(
                e,
                ExpositionError {
                    line: 3,
                    what,
                    text: line.to_owned()
                },
                "{line:?}"
            );
            assert!(e.to_string().starts_with("exposition line 3: "), "{e}");
        }
    }
}
