//! ibsmd's partition API (`--rest`) on arbitrary bytes, as a request arrives: the head
//! parser, the route, and the JSON body of either change. Never panics; a head read
//! is no longer than what came; a change that reads prints back (as the UFM plugin
//! spells it) to a body that reads to the same change, and is one the API may apply
//! (a P_Key that is neither invalid nor the default partition, non-zero GUIDs each
//! once).
#![no_main]

use libfuzzer_sys::fuzz_target;

// The readers are std/serde-only and live in the ibsmd binary crate, which a fuzz
// crate cannot depend on: build their files here as modules of their own.
#[path = "../../crates/ibsmd/src/rest/api.rs"]
#[allow(dead_code, unreachable_pub)]
mod api;
#[path = "../../crates/ibsmd/src/rest/http.rs"]
#[allow(dead_code, unreachable_pub)]
mod http;

fn check_change(c: &api::Change, add: bool) {
    let k = c.pkey();
    assert!(k != 0 && k < 0x7FFF, "{c:?}");
    let g = c.guids();
    assert!(g.iter().all(|&g| g != 0), "{c:?}");
    for (i, x) in g.iter().enumerate() {
        assert!(!g[..i].contains(x), "{c:?}");
    }
    let body = c.to_json();
    let back = if add {
        api::parse_add(body.as_bytes())
    } else {
        api::parse_remove(body.as_bytes())
    };
    assert_eq!(back.as_ref(), Ok(c), "{body}");
}

fuzz_target!(|data: &[u8]| {
    // The bytes as a JSON body of each change.
    if let Ok(c) = api::parse_add(data) {
        check_change(&c, true);
    }
    if let Ok(c) = api::parse_remove(data) {
        check_change(&c, false);
    }
    // And as a whole request.
    match http::parse_head(data) {
        Ok(Some((head, at))) => {
            assert!(at <= data.len() && at <= http::MAX_HEAD);
            assert!(head.content_length <= http::MAX_BODY);
            let _ = head.basic_auth();
            match api::route(&head.method, &head.target) {
                Ok(api::Route::One { pkey }) => assert!(pkey != 0 && pkey <= 0x7FFF),
                Ok(_) => {}
                Err(e) => assert!((400..500).contains(&e.status()) && !e.body().is_empty()),
            }
        }
        Ok(None) => assert!(data.len() <= http::MAX_HEAD),
        Err(e) => assert!((400..500).contains(&e.status())),
    }
});
