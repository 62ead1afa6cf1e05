//! The partition API: request heads, bodies, file edits, credentials, and the server
//! in-process (plain and TLS) against a partitions file in a temporary directory.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use proptest::prelude::*;

use super::api::{self, ApiError, Change, Route};
use super::auth::{Credentials, CredentialsError};
use super::edit::PartitionFile;
use super::http::{self, HttpError};
use super::{RestError, RestServer, RestSettings};
use ibsm::manager::partition::Membership;

// ---- http ----

#[test]
fn a_request_head_is_read_once_it_is_all_there() {
    let req = b"POST /ufmRest/resources/pkeys HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\
Authorization: Basic dXNlcjpwYTpzcw==\r\n\r\nhello";
    for n in 0..req.len() - 5 - 1 {
        assert_eq!(http::parse_head(&req[..n]), Ok(None), "{n}");
    }
    let (head, at) = http::parse_head(req).unwrap().unwrap();
    assert_eq!(&req[at..], b"hello");
    assert_eq!(head.method, "POST");
    assert_eq!(head.target, "/ufmRest/resources/pkeys");
    assert_eq!(head.content_length, 5);
    assert_eq!(head.header("content-length"), Some("5"));
    // The password is what follows the first colon.
    assert_eq!(head.basic_auth(), Some(("user".into(), "pa:ss".into())));
}

#[test]
fn bad_heads_are_refused_with_their_status() {
    let cases: [(&[u8], u16); 8] = [
        (b"GET /x\r\n\r\n", 400),
        (b"GET x HTTP/1.1\r\n\r\n", 400),
        (b"GET /x HTTP/2\r\n\r\n", 400),
        (b"GET /x HTTP/1.1\r\nno colon\r\n\r\n", 400),
        (b"POST /x HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400),
        (
            b"POST /x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            400,
        ),
        (
            b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
            411,
        ),
        (b"POST /x HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n", 413),
    ];
    for (req, status) in cases {
        let e = http::parse_head(req).unwrap_err();
        assert_eq!(e.status(), status, "{e}: {}", String::from_utf8_lossy(req));
    }
    let long = vec![b'a'; http::MAX_HEAD + 1];
    assert_eq!(http::parse_head(&long), Err(HttpError::HeadTooLarge));
}

#[test]
fn basic_auth_needs_the_basic_scheme_and_base64() {
    let head = |v: &str| {
        let req = format!("GET / HTTP/1.1\r\nAuthorization: {v}\r\n\r\n");
        http::parse_head(req.as_bytes()).unwrap().unwrap().0
    };
    assert_eq!(head("Bearer dXNlcjpw").basic_auth(), None);
    assert_eq!(head("Basic dXNlcjpw!").basic_auth(), None);
    assert_eq!(head("Basic dXNlcg==").basic_auth(), None, "no colon");
    assert_eq!(
        head("basic dTpw").basic_auth(),
        Some(("u".into(), "p".into()))
    );
}

proptest! {
    #[test]
    fn base64_round_trips(b in proptest::collection::vec(any::<u8>(), 0..64)) {
        let s = http::base64_encode(&b);
        prop_assert_eq!(http::base64_decode(&s), Some(b));
    }
}

// ---- api ----

/// The body ufm.go's AddGuidsToPKey sends, byte for byte.
fn plugin_add(pkey: u16, guids: &[&str]) -> String {
    let g: Vec<String> = guids.iter().map(|g| format!("\"{g}\"")).collect();
    format!(
        "{{\"pkey\": \"0x{pkey:04X}\", \"index0\": true, \"ip_over_ib\": true, \"membership\": \"full\", \"guids\": [{}]}}",
        g.join(",")
    )
}

/// The body ufm.go's RemoveGuidsFromPKey sends.
fn plugin_remove(pkey: u16, guids: &[&str]) -> String {
    let g: Vec<String> = guids.iter().map(|g| format!("\"{g}\"")).collect();
    format!(
        "{{\"pkey\": \"0x{pkey:04X}\", \"guids\": [{}]}}",
        g.join(",")
    )
}

#[test]
fn the_plugins_bodies_read_as_their_changes() {
    let add = api::parse_add(plugin_add(0xA, &["0002c90300001001", "02c9030000100200"]).as_bytes());
    assert_eq!(
        add,
        Ok(Change::Add {
            pkey: 0xA,
            guids: vec![0x0002_c903_0000_1001, 0x02c9_0300_0010_0200],
            membership: Membership::Full,
            index0: Some(true),
            ip_over_ib: Some(true),
        })
    );
    let rm = api::parse_remove(plugin_remove(0x7FFE, &["0002C90300001001"]).as_bytes());
    assert_eq!(
        rm,
        Ok(Change::Remove {
            pkey: 0x7FFE,
            guids: vec![0x0002_c903_0000_1001],
        })
    );
    // UFM's defaults: full; the flags unsaid.
    let bare = api::parse_add(br#"{"pkey":"5","guids":["0x0002c90300001001","0002c90300001001"]}"#);
    assert_eq!(
        bare,
        Ok(Change::Add {
            pkey: 5,
            guids: vec![0x0002_c903_0000_1001],
            membership: Membership::Full,
            index0: None,
            ip_over_ib: None,
        }),
        "0x optional, a GUID named twice counted once"
    );
    // The membership bit: the partition is the low 15 bits.
    assert_eq!(
        api::parse_remove(br#"{"pkey":"0x800a","guids":[]}"#).map(|c| c.pkey()),
        Ok(0xA)
    );
}

#[test]
fn bad_bodies_are_refused_naming_the_field() {
    let cases: [(&str, &str); 14] = [
        (r#"{"pkey":"0x7fff","guids":[]}"#, "default partition"),
        (r#"{"pkey":"0xFFFF","guids":[]}"#, "default partition"),
        (r#"{"pkey":"0x0","guids":[]}"#, "invalid P_Key"),
        (r#"{"pkey":"0x8000","guids":[]}"#, "invalid P_Key"),
        (r#"{"pkey":"0x12345","guids":[]}"#, "not a hex P_Key"),
        (r#"{"pkey":"zz","guids":[]}"#, "not a hex P_Key"),
        (r#"{"pkey":"","guids":[]}"#, "not a hex P_Key"),
        (
            r#"{"pkey":"0x1","guids":["0002c9030000100"]}"#,
            "not a port GUID",
        ),
        (
            r#"{"pkey":"0x1","guids":["0000000000000000"]}"#,
            "not a port GUID",
        ),
        (
            r#"{"pkey":"0x1","guids":["00:02:c9:03:00:00:10:01"]}"#,
            "not a port GUID",
        ),
        (
            r#"{"pkey":"0x1","guids":[],"membership":"both"}"#,
            "membership",
        ),
        (r#"{"pkey":"0x1","guids":[],"index0":"true"}"#, "index0"),
        (
            r#"{"pkey":"0x1","guids":[],"mtu_limit":4}"#,
            "unknown field `mtu_limit`",
        ),
        (r#"{"pkey":"0x1"}"#, "missing field `guids`"),
    ];
    for (body, want) in cases {
        let e = api::parse_add(body.as_bytes()).unwrap_err();
        assert_eq!(e.status(), 400, "{body}");
        assert!(e.to_string().contains(want), "{body}: {e}");
        let json: serde_json::Value = serde_json::from_str(&e.body()).unwrap();
        assert!(json["error"].as_str().unwrap().contains(want));
    }
    assert!(api::parse_remove(b"not json").is_err());
    assert!(api::parse_remove(br#"{"pkey":"0x1","guids":[],"membership":"full"}"#).is_err());
}

#[test]
fn routes_are_ufms() {
    use api::route;
    assert_eq!(route("GET", "/ufmRest/app/ufm_version"), Ok(Route::Version));
    assert_eq!(route("POST", "/ufmRest/resources/pkeys"), Ok(Route::Add));
    assert_eq!(route("POST", "/ufmRest/resources/pkeys/"), Ok(Route::Add));
    assert_eq!(
        route("POST", "/ufmRest/actions/remove_guids_from_pkey"),
        Ok(Route::Remove)
    );
    assert_eq!(
        route("GET", "/ufmRest/resources/pkeys/?guids_data=true"),
        Ok(Route::List { guids: true })
    );
    assert_eq!(
        route("GET", "/ufmRest/resources/pkeys"),
        Ok(Route::List { guids: false })
    );
    assert_eq!(
        route("GET", "/ufmRest/resources/pkeys/0x000A?guids_data=true"),
        Ok(Route::One { pkey: 0xA })
    );
    assert_eq!(
        route("GET", "/ufmRest/resources/pkeys/0x7fff"),
        Ok(Route::One { pkey: 0x7FFF }),
        "the default partition is readable"
    );
    assert_eq!(
        route("DELETE", "/ufmRest/resources/pkeys")
            .unwrap_err()
            .status(),
        405
    );
    assert_eq!(
        route("GET", "/ufmRest/actions/remove_guids_from_pkey")
            .unwrap_err()
            .status(),
        405
    );
    assert_eq!(
        route("GET", "/ufmRest/resources/systems")
            .unwrap_err()
            .status(),
        404
    );
    assert_eq!(
        route("GET", "/ufmRest/resources/pkeys/0x1/x")
            .unwrap_err()
            .status(),
        404
    );
    assert!(matches!(
        route("GET", "/ufmRest/resources/pkeys/0x8000"),
        Err(ApiError::PKeyInvalid(_))
    ));
}

fn change() -> impl Strategy<Value = Change> {
    let pkey = (1u16..0x7FFF).prop_filter("not default", |k| *k != 0x7FFF);
    let guids = proptest::collection::vec(1u64.., 0..6).prop_map(|mut v| {
        let mut seen = Vec::new();
        v.retain(|g| {
            let new = !seen.contains(g);
            seen.push(*g);
            new
        });
        v
    });
    let flag = proptest::option::of(any::<bool>());
    prop_oneof![
        (
            pkey.clone(),
            guids.clone(),
            any::<bool>(),
            flag.clone(),
            flag
        )
            .prop_map(|(pkey, guids, full, index0, ip_over_ib)| Change::Add {
                pkey,
                guids,
                membership: if full {
                    Membership::Full
                } else {
                    Membership::Limited
                },
                index0,
                ip_over_ib,
            }),
        (pkey, guids).prop_map(|(pkey, guids)| Change::Remove { pkey, guids }),
    ]
}

proptest! {
    /// A change spelled as the plugin spells it reads back to itself.
    #[test]
    fn changes_round_trip_through_their_json(c in change()) {
        let body = c.to_json();
        let back = match &c {
            Change::Add { .. } => api::parse_add(body.as_bytes()),
            Change::Remove { .. } => api::parse_remove(body.as_bytes()),
        };
        prop_assert_eq!(back, Ok(c), "{}", body);
    }
}

// ---- edit ----

const FILE: &str = "# tenants\n\
Default=0x7fff, ipoib : ALL=full ;  # everyone\n\
\n\
storage=0x0010, ipoib, mtu=4 : ALL_CAS=full\n    mgid=ff12:401b::0707, sl=1\n    ;\n\
# tenant a, by hand\n\
tenant_a=0x000a, defmember=full : 0x0002c90300001001, 0x0002c90300001002=limited ;\n\
# the end\n";

fn edited(text: &str, c: &Change) -> (String, bool) {
    let mut f = PartitionFile::parse(text).unwrap();
    let changed = f.apply(c);
    (f.render(), changed)
}

#[test]
fn a_file_renders_back_byte_for_byte() {
    for t in [
        FILE,
        "",
        "# only a comment",
        "a=0x1:ALL;",
        "a=0x1 : ALL ; b=0x2 : ALL ;\n\n",
    ] {
        assert_eq!(PartitionFile::parse(t).unwrap().render(), t);
    }
    assert!(PartitionFile::parse("a=0x1 : ALL").is_err());
}

#[test]
fn an_add_creates_a_partition_at_the_end() {
    let c = api::parse_add(plugin_add(0x20, &["0002c90300002001"]).as_bytes()).unwrap();
    let (text, changed) = edited(FILE, &c);
    assert!(changed);
    assert_eq!(
        text,
        format!("{FILE}api_pkey_0x20=0x0020, ipoib, indx0 : 0x0002c90300002001=full ;\n")
    );
    // Again: nothing to change.
    assert_eq!(edited(&text, &c), (text.clone(), false));
    let f = PartitionFile::parse(&text).unwrap();
    let v = f.view(0x20).unwrap();
    assert_eq!(
        (v.ipoib, v.index0, v.name.as_str()),
        (true, true, "api_pkey_0x20")
    );
    assert_eq!(v.guids.len(), 1);
    assert_eq!(v.guids[0].membership, "full");
}

#[test]
fn an_add_to_a_hand_written_partition_touches_that_statement_only() {
    let c = Change::Add {
        pkey: 0xA,
        guids: vec![0x0002_c903_0000_1002, 0x0002_c903_0000_1003],
        membership: Membership::Full,
        index0: None,
        ip_over_ib: None,
    };
    let (text, changed) = edited(FILE, &c);
    assert!(changed);
    let want = FILE.replace(
        "tenant_a=0x000a, defmember=full : 0x0002c90300001001, 0x0002c90300001002=limited ;",
        "tenant_a=0x000a, defmember=full : 0x0002c90300001001, 0x0002c90300001002=full, 0x0002c90300001003=full ;",
    );
    assert_eq!(text, want);
}

#[test]
fn a_remove_keeps_the_partition_when_its_last_guid_goes() {
    let rm = |g: Vec<u64>| Change::Remove {
        pkey: 0xA,
        guids: g,
    };
    let (text, changed) = edited(FILE, &rm(vec![0x0002_c903_0000_1001, 0x99]));
    assert!(changed);
    assert_eq!(
        text,
        FILE.replace(
            "0x0002c90300001001, 0x0002c90300001002=limited ;",
            "0x0002c90300001002=limited ;"
        )
    );
    let (text, changed) = edited(&text, &rm(vec![0x0002_c903_0000_1002]));
    assert!(changed);
    assert!(
        text.contains("tenant_a=0x000a, defmember=full : ;"),
        "{text}"
    );
    assert!(text.contains("# tenant a, by hand\n") && text.ends_with("# the end\n"));
    let f = PartitionFile::parse(&text).unwrap();
    assert_eq!(f.view(0xA).unwrap().guids, []);
    // Removing what is not there, or from a P_Key no statement has: no change.
    assert_eq!(edited(&text, &rm(vec![1])), (text.clone(), false));
    let other = Change::Remove {
        pkey: 0x33,
        guids: vec![1],
    };
    assert_eq!(edited(&text, &other), (text.clone(), false));
}

#[test]
fn a_guid_named_twice_in_a_partition_gets_the_new_membership_everywhere() {
    let text = "a=0x0005 : 0x0000000000000009=full ;\nb=0x0005 : 0x0000000000000009=both ;\n";
    let c = Change::Add {
        pkey: 5,
        guids: vec![9],
        membership: Membership::Limited,
        index0: None,
        ip_over_ib: None,
    };
    let f = PartitionFile::parse(text).unwrap();
    assert_eq!(
        f.view(5).unwrap().guids[0].membership,
        "both",
        "the stronger"
    );
    let (out, changed) = edited(text, &c);
    assert!(changed);
    assert_eq!(
        out,
        "a=0x0005 : 0x0000000000000009=limited ;\nb=0x0005 : 0x0000000000000009=limited ;\n"
    );
    let f = PartitionFile::parse(&out).unwrap();
    assert_eq!(f.view(5).unwrap().guids[0].membership, "limited");
}

/// The model of what the file should say: P_Key -> GUID -> full.
type Model = BTreeMap<u16, BTreeMap<u64, bool>>;

fn model_apply(m: &mut Model, c: &Change) {
    match c {
        Change::Add {
            pkey,
            guids,
            membership,
            ..
        } => {
            let p = m.entry(*pkey).or_default();
            for g in guids {
                p.insert(*g, *membership == Membership::Full);
            }
        }
        Change::Remove { pkey, guids } => {
            if let Some(p) = m.get_mut(pkey) {
                for g in guids {
                    p.remove(g);
                }
            }
        }
    }
}

fn small_change() -> impl Strategy<Value = Change> {
    // Few P_Keys and GUIDs, so that changes meet.
    (
        1u16..4,
        proptest::collection::vec(1u64..6, 0..4),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(pkey, guids, add, full)| {
            let mut g = guids;
            g.sort_unstable();
            g.dedup();
            if add {
                Change::Add {
                    pkey,
                    guids: g,
                    membership: if full {
                        Membership::Full
                    } else {
                        Membership::Limited
                    },
                    index0: None,
                    ip_over_ib: None,
                }
            } else {
                Change::Remove { pkey, guids: g }
            }
        })
}

proptest! {
    /// Any sequence of changes leaves the file saying what the changes say, and the
    /// hand-written lines before it as they were.
    #[test]
    fn the_file_follows_every_change(cs in proptest::collection::vec(small_change(), 0..24)) {
        let mut text = FILE.to_owned();
        let mut model = Model::new();
        for c in &cs {
            let mut f = PartitionFile::parse(&text).unwrap();
            f.apply(c);
            text = f.render();
            model_apply(&mut model, c);
        }
        prop_assert!(text.starts_with(FILE.split("tenant_a").next().unwrap()));
        let f = PartitionFile::parse(&text).unwrap();
        for (pkey, members) in &model {
            let v = f.view(*pkey).unwrap();
            let got: BTreeMap<u64, bool> =
                v.guids.iter().map(|m| (m.guid, m.membership == "full")).collect();
            prop_assert_eq!(&got, members, "{}", text);
        }
        prop_assert!(f.view(0xA).is_some());
    }
}

// ---- credentials ----

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ibsmd_rest_{tag}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write_mode(path: &Path, text: &str, mode: u32) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn a_credentials_file_others_can_read_is_refused() {
    let d = tempdir("creds");
    let p = d.join("users");
    for mode in [0o644, 0o640, 0o604, 0o620, 0o602] {
        write_mode(&p, "k8s:secret\n", mode);
        let e = Credentials::load(&p).unwrap_err();
        assert!(
            matches!(e, CredentialsError::Permissions { .. }),
            "{mode:o}: {e}"
        );
        assert!(e.to_string().contains("chmod 600"), "{e}");
    }
    write_mode(&p, "# users\n\nk8s:se:cret\nops:pw\n", 0o600);
    let c = Credentials::load(&p).unwrap();
    assert!(c.check("k8s", "se:cret") && c.check("ops", "pw"));
    assert!(!c.check("k8s", "se:cre") && !c.check("k8s", "pw") && !c.check("", ""));
    write_mode(&p, "k8s:a\nnobody\n", 0o600);
    assert!(matches!(
        Credentials::load(&p),
        Err(CredentialsError::Line { line: 2, .. })
    ));
    write_mode(&p, "# none\n", 0o400);
    assert!(matches!(
        Credentials::load(&p),
        Err(CredentialsError::Empty { .. })
    ));
    let _ = std::fs::remove_dir_all(&d);
}

// ---- the server, in-process ----

const USER: &str = "k8s";
const PASSWORD: &str = "s3cret";

struct Api {
    dir: PathBuf,
    file: PathBuf,
    server: RestServer,
    agent: ureq::Agent,
    base: String,
}

impl Api {
    /// A plain-HTTP API on a file holding `text`.
    fn start(tag: &str, text: &str) -> Self {
        let dir = tempdir(tag);
        let file = dir.join("partitions.conf");
        std::fs::write(&file, text).unwrap();
        let creds = dir.join("users");
        write_mode(&creds, &format!("{USER}:{PASSWORD}\n"), 0o600);
        let opts = RestSettings {
            address: Some("127.0.0.1:0".into()),
            credentials: Some(creds),
            insecure: true,
            ..RestSettings::default()
        };
        let server =
            RestServer::start(RestServer::prepare(&opts, Some(&file)).unwrap().unwrap()).unwrap();
        let base = format!("http://{}", server.addr());
        Self {
            dir,
            file,
            server,
            agent: ureq::AgentBuilder::new().build(),
            base,
        }
    }

    /// A request as ufm.go's HTTP driver makes it; (status, body).
    fn send(&self, method: &str, path: &str, body: Option<&str>, password: &str) -> (u16, String) {
        let auth = http::base64_encode(format!("{USER}:{password}").as_bytes());
        let req = self
            .agent
            .request(method, &format!("{}{path}", self.base))
            .set("Authorization", &format!("Basic {auth}"))
            .set("Content-Type", "application/json; charset=utf-8");
        let res = match body {
            Some(b) => req.send_string(b),
            None => req.call(),
        };
        match res {
            Ok(r) => (r.status(), r.into_string().unwrap()),
            Err(ureq::Error::Status(code, r)) => (code, r.into_string().unwrap()),
            Err(e) => panic!("{method} {path}: {e}"),
        }
    }

    fn add(&self, pkey: u16, guids: &[&str]) -> (u16, String) {
        self.send(
            "POST",
            "/ufmRest/resources/pkeys",
            Some(&plugin_add(pkey, guids)),
            PASSWORD,
        )
    }

    fn remove(&self, pkey: u16, guids: &[&str]) -> (u16, String) {
        self.send(
            "POST",
            "/ufmRest/actions/remove_guids_from_pkey",
            Some(&plugin_remove(pkey, guids)),
            PASSWORD,
        )
    }

    fn text(&self) -> String {
        std::fs::read_to_string(&self.file).unwrap()
    }
}

impl Drop for Api {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

const START: &str = "Default=0x7fff, ipoib : ALL=full ;\n";

#[test]
fn the_api_answers_the_plugins_requests() {
    let api = Api::start("plugin", START);
    let (code, body) = api.send("GET", "/ufmRest/app/ufm_version", None, PASSWORD);
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("ufm_release_version"));
    assert_eq!(
        api.add(0xA, &["0002c90300001001", "0002c90300001002"]).0,
        200
    );
    let cfg = api
        .server
        .take_pending()
        .expect("a policy for the run loop");
    assert_eq!(cfg.statements.len(), 2);
    assert!(api.server.take_pending().is_none(), "taken once");
    assert_eq!(
        api.text(),
        format!(
            "{START}api_pkey_0xa=0x000a, ipoib, indx0 : 0x0002c90300001001=full, 0x0002c90300001002=full ;\n"
        )
    );
    let (code, body) = api.send("GET", "/ufmRest/resources/pkeys/0xa", None, PASSWORD);
    assert_eq!(code, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["partition"], "api_pkey_0xa");
    assert_eq!(v["guids"][1]["guid"], "0002c90300001002");
    assert_eq!(v["guids"][1]["membership"], "full");
    // The plugin's ListGuidsInUse: P_Key -> {"guids": [{"guid": ...}]}.
    let (code, body) = api.send(
        "GET",
        "/ufmRest/resources/pkeys/?guids_data=true",
        None,
        PASSWORD,
    );
    assert_eq!(code, 200);
    let all: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(all["0xa"]["guids"][0]["guid"], "0002c90300001001");
    assert_eq!(all["0x7fff"]["guids"], serde_json::json!([]));
    assert_eq!(api.remove(0xA, &["0002c90300001001"]).0, 200);
    assert!(api.server.take_pending().is_some());
    assert!(
        api.text().ends_with(": 0x0002c90300001002=full ;\n"),
        "{}",
        api.text()
    );
    // Removing again changes nothing and leaves nothing for the run loop.
    assert_eq!(api.remove(0xA, &["0002c90300001001"]).0, 200);
    assert!(api.server.take_pending().is_none());
    assert_eq!(
        api.send("GET", "/ufmRest/resources/pkeys/0x0b", None, PASSWORD)
            .0,
        404
    );
}

#[test]
fn a_wrong_password_or_a_bad_body_changes_nothing() {
    let api = Api::start("refused", START);
    let body = plugin_add(0xA, &["0002c90300001001"]);
    for (path, b, pw, want) in [
        (
            "/ufmRest/resources/pkeys",
            Some(body.as_str()),
            "wrong",
            401,
        ),
        ("/ufmRest/app/ufm_version", None, "", 401),
        (
            "/ufmRest/resources/pkeys",
            Some("{\"pkey\": \"0x000A\""),
            PASSWORD,
            400,
        ),
        (
            "/ufmRest/resources/pkeys",
            Some(&plugin_add(0x7FFF, &["0002c90300001001"])),
            PASSWORD,
            400,
        ),
        (
            "/ufmRest/resources/pkeys",
            Some(&plugin_add(0xA, &["0002c9030000100"])),
            PASSWORD,
            400,
        ),
        (
            "/ufmRest/actions/remove_guids_from_pkey",
            Some("[]"),
            PASSWORD,
            400,
        ),
    ] {
        let method = if b.is_some() { "POST" } else { "GET" };
        let (code, text) = api.send(method, path, b, pw);
        assert_eq!(code, want, "{path} {b:?}: {text}");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(v["error"].is_string(), "{text}");
        assert_eq!(api.text(), START);
        assert!(api.server.take_pending().is_none());
    }
    // Without any Authorization header at all: 401 and the challenge.
    let r = api
        .agent
        .get(&format!("{}/ufmRest/app/ufm_version", api.base))
        .call();
    match r {
        Err(ureq::Error::Status(401, r)) => {
            assert_eq!(r.header("WWW-Authenticate"), Some("Basic realm=\"ibsmd\""));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn many_changes_between_two_polls_are_one_policy() {
    let api = Api::start("batch", START);
    for i in 0..100u16 {
        let g = format!("{:016x}", 0x1000 + u64::from(i));
        assert_eq!(api.add(1 + i % 7, &[&g]).0, 200);
    }
    let cfg = api.server.take_pending().expect("one policy");
    assert!(api.server.take_pending().is_none());
    let members: usize = cfg.statements.iter().map(|s| s.members.len()).sum();
    assert_eq!(members, 1 + 100, "every change in the one policy");
    assert_eq!(
        PartitionFile::parse(&api.text())
            .unwrap()
            .config()
            .statements,
        cfg.statements
    );
}

#[test]
fn a_thousand_add_remove_cycles_leave_what_the_last_request_says() {
    let api = Api::start("cycles", START);
    let guids: Vec<String> = (1..=4u64)
        .map(|g| format!("{:016x}", 0x0002_c903_0000_2000 + g))
        .collect();
    let mut model: BTreeMap<u16, std::collections::BTreeSet<&str>> = BTreeMap::new();
    for i in 0..1000usize {
        let pkey = 0x10 + (i % 3) as u16;
        let g = guids[i % 4].as_str();
        let g2 = guids[(i / 4) % 4].as_str();
        let p = model.entry(pkey).or_default();
        assert_eq!(api.add(pkey, &[g, g2]).0, 200);
        p.insert(g);
        p.insert(g2);
        if i % 5 != 4 {
            assert_eq!(api.remove(pkey, &[g]).0, 200);
            p.remove(g);
        }
    }
    let f = PartitionFile::parse(&api.text()).unwrap();
    let pending = api.server.take_pending().expect("a policy");
    assert_eq!(f.config().statements, pending.statements);
    for (pkey, want) in &model {
        let got: std::collections::BTreeSet<String> = f
            .view(*pkey)
            .unwrap()
            .guids
            .iter()
            .map(|m| api::guid_text(m.guid))
            .collect();
        let want: std::collections::BTreeSet<String> =
            want.iter().map(|s| (*s).to_owned()).collect();
        assert_eq!(got, want, "P_Key {pkey:#x}");
    }
    assert!(api.text().starts_with(START));
}

/// A SIGHUP's re-read and an API change at the same moment: whichever order they
/// take, the run loop ends up with the change. The re-read here waits for the change
/// to be written while it holds the file; with the lock taken first the change waits
/// instead and is left for the loop afterwards.
#[test]
fn a_sighup_reread_never_loses_an_api_change() {
    let api = Api::start("sighup", START);
    let file = api.file.clone();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let base = api.base.clone();
    let read = || {
        let text = std::fs::read_to_string(&file).unwrap();
        // The change arrives while the file is being read.
        let body = plugin_add(0xC, &["0002c90300003001"]);
        let tx = done_tx.clone();
        let base = base.clone();
        std::thread::spawn(move || {
            let auth = http::base64_encode(format!("{USER}:{PASSWORD}").as_bytes());
            let r = ureq::post(&format!("{base}/ufmRest/resources/pkeys"))
                .set("Authorization", &format!("Basic {auth}"))
                .send_string(&body);
            tx.send(r.map(|r| r.status()).ok()).unwrap();
        });
        // Not a timing assertion: the change gets a chance to be written first.
        let during = done_rx.recv_timeout(std::time::Duration::from_secs(2)).ok();
        Ok::<_, ()>((PartitionFile::parse(&text).unwrap().config(), during))
    };
    let (read_policy, during) = api.server.reload(read, |_| Some(api.file.clone())).unwrap();
    let mut policy = Some(read_policy);
    if during.is_none() {
        assert_eq!(done_rx.recv().unwrap(), Some(200));
    }
    // The loop's next turn.
    if let Some(p) = api.server.take_pending() {
        policy = Some(p);
    }
    let applied = policy.unwrap();
    assert!(
        applied.statements.iter().any(|s| s.pkey == Some(0xC)),
        "the API change was lost: {applied:?}"
    );
    assert_eq!(
        PartitionFile::parse(&api.text())
            .unwrap()
            .config()
            .statements,
        applied.statements
    );
}

/// The run loop never waits for the API's file I/O: while the lock is held (here by
/// a re-read that blocks until told), `take_pending` answers at once.
#[test]
fn the_run_loop_never_waits_for_the_apis_lock() {
    let api = Api::start("trylock", START);
    assert_eq!(api.add(0xA, &["0002c90300001001"]).0, 200);
    let (hold_tx, hold_rx) = std::sync::mpsc::channel::<()>();
    let (held_tx, held_rx) = std::sync::mpsc::channel::<()>();
    let server = &api.server;
    std::thread::scope(|s| {
        s.spawn(move || {
            let _ = server.reload(
                || {
                    held_tx.send(()).unwrap();
                    hold_rx.recv().unwrap();
                    Ok::<_, ()>(())
                },
                |()| None,
            );
        });
        held_rx.recv().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        s.spawn(move || tx.send(server.take_pending().is_some()).unwrap());
        // Not a timing assertion: a way out of the deadlock a waiting call would be.
        let answer = rx.recv_timeout(std::time::Duration::from_secs(10));
        hold_tx.send(()).unwrap();
        assert_eq!(answer, Ok(false), "take_pending waited for the lock");
    });
}

/// A SIGHUP reads the users again: a new password works and the old one gets 401 at
/// once, without a restart; a file others may read changes nothing. Planted: the
/// reload left out -> the new password gets 401, test fails.
#[test]
fn the_users_are_read_again_at_a_sighup() {
    let api = Api::start("reusers", START);
    let creds = api.dir.join("users");
    assert_eq!(
        api.send("GET", "/ufmRest/app/ufm_version", None, PASSWORD)
            .0,
        200
    );
    write_mode(&creds, &format!("{USER}:changed\n"), 0o600);
    // Read once at start: the file's new text means nothing yet.
    assert_eq!(
        api.send("GET", "/ufmRest/app/ufm_version", None, "changed")
            .0,
        401
    );
    api.server.reload_credentials().unwrap();
    assert_eq!(
        api.send("GET", "/ufmRest/app/ufm_version", None, "changed")
            .0,
        200
    );
    assert_eq!(
        api.send("GET", "/ufmRest/app/ufm_version", None, PASSWORD)
            .0,
        401
    );
    // A file made readable by others is refused; the users in force stay.
    write_mode(&creds, &format!("{USER}:third\n"), 0o644);
    assert!(matches!(
        api.server.reload_credentials(),
        Err(CredentialsError::Permissions { .. })
    ));
    assert_eq!(
        api.send("GET", "/ufmRest/app/ufm_version", None, "changed")
            .0,
        200
    );
    assert_eq!(
        api.send("GET", "/ufmRest/app/ufm_version", None, "third").0,
        401
    );
}

#[test]
fn the_api_refuses_to_start_without_what_it_needs() {
    let d = tempdir("start");
    let creds = d.join("users");
    write_mode(&creds, "a:b\n", 0o600);
    let file = d.join("partitions.conf");
    std::fs::write(&file, START).unwrap();
    let base = RestSettings {
        address: Some("127.0.0.1:0".into()),
        credentials: Some(creds.clone()),
        insecure: true,
        ..RestSettings::default()
    };
    assert!(
        RestServer::prepare(&RestSettings::default(), None)
            .unwrap()
            .is_none()
    );
    assert!(matches!(
        RestServer::prepare(&base, None),
        Err(RestError::NoPartitionFile)
    ));
    let no_creds = RestSettings {
        credentials: None,
        ..base.clone()
    };
    assert!(matches!(
        RestServer::prepare(&no_creds, Some(&file)),
        Err(RestError::NoCredentials)
    ));
    let plain = RestSettings {
        insecure: false,
        ..base.clone()
    };
    assert!(matches!(
        RestServer::prepare(&plain, Some(&file)),
        Err(RestError::NoTls)
    ));
    let half = RestSettings {
        cert: Some(file.clone()),
        ..base.clone()
    };
    assert!(matches!(
        RestServer::prepare(&half, Some(&file)),
        Err(RestError::TlsHalf)
    ));
    write_mode(&creds, "a:b\n", 0o644);
    assert!(matches!(
        RestServer::prepare(&base, Some(&file)),
        Err(RestError::Credentials(CredentialsError::Permissions { .. }))
    ));
    let _ = std::fs::remove_dir_all(&d);
}

/// A self-signed certificate for 127.0.0.1 and its key, made by the openssl command;
/// `None` (the test says so) without it.
fn self_signed(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let ok = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "2", "-subj", "/CN=localhost", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .args(["-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"])
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIPPED: no openssl command to make a test certificate");
        return None;
    }
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    Some((cert, key))
}

#[test]
fn https_with_a_certificate_and_key() {
    let d = tempdir("tls");
    let Some((cert, key)) = self_signed(&d) else {
        return;
    };
    let creds = d.join("users");
    write_mode(&creds, &format!("{USER}:{PASSWORD}\n"), 0o600);
    let file = d.join("partitions.conf");
    std::fs::write(&file, START).unwrap();
    let opts = RestSettings {
        address: Some("127.0.0.1:0".into()),
        credentials: Some(creds),
        cert: Some(cert.clone()),
        key: Some(key.clone()),
        insecure: false,
    };
    // A key others may read is refused.
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(matches!(
        RestServer::prepare(&opts, Some(&file)),
        Err(RestError::KeyPermissions { .. })
    ));
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let server =
        RestServer::start(RestServer::prepare(&opts, Some(&file)).unwrap().unwrap()).unwrap();
    assert_eq!(server.scheme(), "https");
    // The client trusts the test's certificate only.
    use rustls_pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls_pki_types::CertificateDer::pem_file_iter(&cert).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let agent = ureq::AgentBuilder::new()
        .tls_config(Arc::new(client))
        .build();
    let auth = http::base64_encode(format!("{USER}:{PASSWORD}").as_bytes());
    let r = agent
        .post(&format!(
            "https://127.0.0.1:{}/ufmRest/resources/pkeys",
            server.addr().port()
        ))
        .set("Authorization", &format!("Basic {auth}"))
        .send_string(&plugin_add(0xA, &["0002c90300001001"]))
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(
        std::fs::read_to_string(&file)
            .unwrap()
            .contains("0x0002c90300001001=full")
    );
    // Plain HTTP to the HTTPS port gets nowhere.
    let plain = ureq::get(&format!("http://{}/ufmRest/app/ufm_version", server.addr())).call();
    assert!(plain.is_err());
    drop(server);
    let _ = std::fs::remove_dir_all(&d);
}

/// Go's net/http and crypto/tls making the UFM plugin's requests
/// (`tests/ufm_client/main.go`, stdlib only: the plugin itself needs the Go module
/// proxy), against the API over HTTPS: verified with `UFM_CERTIFICATE` and not
/// (the plugin without one), a wrong password, the default partition, add, remove
/// and the plugin's ListGuidsInUse.
#[test]
fn gos_http_stack_drives_the_api_as_the_ufm_plugin_does() {
    if !ibsm_tests::peers_present(
        "rest go client (apt-get install golang-go)",
        &["/usr/bin/go"],
    ) {
        return;
    }
    let d = tempdir("go");
    let Some((cert, key)) = self_signed(&d) else {
        return;
    };
    let creds = d.join("users");
    write_mode(&creds, &format!("{USER}:{PASSWORD}\n"), 0o600);
    let file = d.join("partitions.conf");
    std::fs::write(&file, START).unwrap();
    let opts = RestSettings {
        address: Some("127.0.0.1:0".into()),
        credentials: Some(creds),
        cert: Some(cert.clone()),
        key: Some(key),
        insecure: false,
    };
    let server =
        RestServer::start(RestServer::prepare(&opts, Some(&file)).unwrap().unwrap()).unwrap();
    let bin = d.join("ufm_client");
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ufm_client/main.go");
    let go = |c: &mut std::process::Command| {
        // Standard library only: no module, no proxy, caches in the test's directory.
        c.env("GO111MODULE", "off")
            .env("GOPROXY", "off")
            .env("GOCACHE", d.join("gocache"))
            .env("GOPATH", d.join("gopath"))
            .env("HOME", &d);
    };
    let mut build = std::process::Command::new("go");
    build.arg("build").arg("-o").arg(&bin).arg(src);
    go(&mut build);
    let out = build.output().unwrap();
    assert!(
        out.status.success(),
        "go build: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pem = std::fs::read_to_string(&cert).unwrap();
    let client = |password: &str, verify: bool, ops: &[&str]| {
        let mut c = std::process::Command::new(&bin);
        c.args(ops)
            .env("UFM_USERNAME", USER)
            .env("UFM_PASSWORD", password)
            .env("UFM_ADDRESS", "127.0.0.1")
            .env("UFM_PORT", server.addr().port().to_string());
        if verify {
            c.env("UFM_CERTIFICATE", &pem);
        }
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "{ops:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    client(PASSWORD, false, &["version"]);
    client(
        "wrong",
        true,
        &[
            "status:401:version",
            "status:401:add:0xA:00:02:c9:03:00:00:10:01",
        ],
    );
    client(
        PASSWORD,
        true,
        &["status:400:add:0x7FFF:00:02:c9:03:00:00:10:01"],
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), START);
    let listed = client(
        PASSWORD,
        true,
        &[
            "version",
            "add:0xA:00:02:c9:03:00:00:10:01,00:02:c9:03:00:00:10:02",
            "remove:0xA:00:02:c9:03:00:00:10:01",
            "add:0x7FFE:02:00:00:00:00:00:00:3e",
            "list",
        ],
    );
    assert_eq!(listed, "0002c90300001002 0xa\n020000000000003e 0x7ffe\n");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("api_pkey_0xa=0x000a, ipoib, indx0 : 0x0002c90300001002=full ;"),
        "{text}"
    );
    assert!(server.take_pending().is_some());
    drop(server);
    let _ = std::fs::remove_dir_all(&d);
}
