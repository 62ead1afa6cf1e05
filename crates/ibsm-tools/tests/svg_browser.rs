//! Peer test: `ibsm-netdiscover --svg FILE --routes` on ibsim fabrics OpenSM brought up,
//! looked at in a real browser. The picture is valid XML (roxmltree) with one element
//! per switch, per CA or folded box of CAs and per cable, as the generated fabric has
//! them; headless Chromium loads it inside an HTML page whose script counts the elements
//! in the browser's DOM (`--dump-dom`), and a screenshot of it is not blank (the PNG
//! decoded, its pixels' spread measured). Links carry the routes OpenSM programmed.
//! Skips loudly without Chromium (Debian's `chromium`), unless `IBSM_REQUIRE_PEERS=1`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use ibsm_tests::peer::{
    OPENSM, PeerFabric, client, kill_other, net_file, run_bounded, start_opensm,
};
use ibsm_tests::{IBSIM, PRELOAD, peers_present};
use ibsm_topology::Fabric;
use ibsm_topology::generate::{self, Grid};

const CHROMIUM: &str = "/usr/bin/chromium";

fn first_ca(net: &str) -> String {
    net.lines()
        .find_map(|l| {
            let rest = l.strip_prefix("Hca")?;
            let start = rest.find('"')? + 1;
            let len = rest[start..].find('"')?;
            Some(rest[start..start + len].to_owned())
        })
        .expect("a CA in the net file")
}

/// Elements by class, as the SVG holds them (read as XML).
fn xml_counts(svg: &str) -> BTreeMap<String, usize> {
    let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("not XML: {e}"));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let mut counts = BTreeMap::new();
    for n in doc.descendants().filter(roxmltree::Node::is_element) {
        if let Some(class) = n.attribute("class") {
            for c in class.split_whitespace() {
                *counts.entry(c.to_owned()).or_default() += 1;
            }
        }
    }
    counts
}

/// Runs Chromium headless on `url` with `args`; its stdout.
fn chromium(dir: &Path, args: &[&str], url: &str) -> String {
    let mut c = Command::new(CHROMIUM);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
    ])
    .arg(format!("--user-data-dir={}", dir.join("profile").display()))
    .args(args)
    .arg(url);
    let (ok, out, err) = run_bounded(c, Duration::from_secs(120));
    assert!(ok, "chromium {args:?} failed:\n{err}");
    out
}

/// The picture's element counts as the browser's DOM has them.
fn dom_counts(dir: &Path, svg: &str) -> BTreeMap<String, usize> {
    let page = dir.join("page.html");
    let html = format!(
        "<!DOCTYPE html><html><body>{svg}<pre id=\"counts\"></pre><script>\
         const n = (s) => document.querySelectorAll('svg ' + s).length;\
         document.getElementById('counts').textContent = \
         ['switch', 'ca', 'cas', 'link', 'unhealthy'].map(c => c + '=' + n('.' + c)).join(' ');\
         </script></body></html>"
    );
    std::fs::write(&page, html).unwrap();
    let dom = chromium(dir, &["--dump-dom"], &format!("file://{}", page.display()));
    let start = dom
        .find("<pre id=\"counts\">")
        .expect("the counts in the DOM")
        + 17;
    let end = start + dom[start..].find("</pre>").unwrap();
    dom[start..end]
        .split_whitespace()
        .filter_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            let n: usize = v.parse().ok()?;
            (n > 0).then(|| (k.to_owned(), n))
        })
        .collect()
}

/// Renders the SVG file to a PNG and returns (width, height, luminance variance, share
/// of pixels that are not background white).
fn screenshot(dir: &Path, svg_file: &Path) -> (u32, u32, f64, f64) {
    let png_path = dir.join("shot.png");
    chromium(
        dir,
        &[
            &format!("--screenshot={}", png_path.display()),
            "--window-size=1200,800",
        ],
        &format!("file://{}", svg_file.display()),
    );
    let decoder = png::Decoder::new(std::fs::File::open(&png_path).expect("the screenshot"));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("a frame");
    let bytes = &buf[..info.buffer_size()];
    let channels = info.color_type.samples();
    assert!(channels >= 3, "{:?}", info.color_type);
    let lum: Vec<f64> = bytes
        .chunks_exact(channels)
        .map(|p| 0.299 * f64::from(p[0]) + 0.587 * f64::from(p[1]) + 0.114 * f64::from(p[2]))
        .collect();
    let mean = lum.iter().sum::<f64>() / lum.len() as f64;
    let var = lum.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / lum.len() as f64;
    let inked = lum.iter().filter(|&&l| l < 240.0).count() as f64 / lum.len() as f64;
    (info.width, info.height, var, inked)
}

/// What the picture of `topo` must hold with CAs folded above 4 per switch:
/// (switches, CA circles, CA boxes, lines).
fn expected(topo: &Fabric) -> (usize, usize, usize, usize) {
    let mut boxes = 0;
    let mut circles = 0;
    let mut lines = 0;
    for (id, _) in topo.switches() {
        let cas = topo
            .links_of(id)
            .filter(|(_, e, _)| !topo.node(e.node).unwrap().is_switch())
            .count();
        if cas > 4 {
            boxes += 1;
            lines += 1;
        } else {
            circles += cas;
            lines += cas;
        }
    }
    let sw_links = topo
        .links()
        .filter(|(_, l)| {
            topo.node(l.a.node).unwrap().is_switch() && topo.node(l.b.node).unwrap().is_switch()
        })
        .count();
    (topo.switch_count(), circles, boxes, lines + sw_links)
}

fn picture_in_a_browser(tag: &str, topo: &Fabric) {
    let net = net_file(topo, tag);
    let mut p = PeerFabric::start(tag, &net);
    let sm = start_opensm(&mut p, &first_ca(&net), 0, &[]);
    let svg_file = p.path("fabric.svg");
    let mut c = client(&p, env!("CARGO_BIN_EXE_ibsm-netdiscover"), None, "diag");
    c.args(["--svg", svg_file.to_str().unwrap(), "--routes"]);
    let (ok, _, err) = run_bounded(c, Duration::from_secs(120));
    kill_other(&mut p, sm);
    assert!(ok, "{tag}: ibsm-netdiscover --svg failed: {err}");
    let svg = std::fs::read_to_string(&svg_file).unwrap();

    let (switches, circles, boxes, lines) = expected(topo);
    let xml = xml_counts(&svg);
    let get = |m: &BTreeMap<String, usize>, k: &str| m.get(k).copied().unwrap_or(0);
    assert_eq!(get(&xml, "switch"), switches, "{tag}: {xml:?}");
    assert_eq!(get(&xml, "ca"), circles, "{tag}: {xml:?}");
    assert_eq!(get(&xml, "cas"), boxes, "{tag}: {xml:?}");
    assert_eq!(get(&xml, "link"), lines, "{tag}: {xml:?}");
    assert_eq!(get(&xml, "unhealthy"), 0, "{tag}: every port Active");
    // The routes OpenSM programmed are on the links (their tooltips count them).
    assert!(svg.contains(" routes</title>"), "{tag}: no route counts");
    assert!(
        svg.contains("stroke=\"hsl("),
        "{tag}: no link coloured by routes"
    );

    let dir = p.path("browser");
    std::fs::create_dir_all(&dir).unwrap();
    let dom = dom_counts(&dir, &svg);
    assert_eq!(
        dom,
        xml_counts(&svg),
        "{tag}: the browser's DOM holds what we wrote"
    );

    let (w, h, var, inked) = screenshot(&dir, &svg_file);
    assert_eq!((w, h), (1200, 800));
    assert!(
        var > 100.0,
        "{tag}: a blank screenshot? luminance variance {var:.1}"
    );
    assert!(
        inked > 0.01,
        "{tag}: {:.2} % of the pixels drawn",
        inked * 100.0
    );
}

fn ready() -> bool {
    peers_present("svg_browser", &[IBSIM, PRELOAD, OPENSM, CHROMIUM])
}

#[test]
fn a_fat_tree_is_drawn_in_a_browser_with_cas_folded() {
    if ready() {
        // Radix 12, two levels: 6 spines, 12 leaves with 6 CAs each (folded).
        picture_in_a_browser("svg_tree", &generate::fat_tree(12, 2).unwrap());
    }
}

#[test]
fn a_torus_is_drawn_in_a_browser_with_each_ca() {
    if ready() {
        let t = generate::grid(&Grid {
            dims: vec![3, 3],
            torus: true,
            cas_per_switch: 2,
        })
        .unwrap();
        picture_in_a_browser("svg_torus", &t);
    }
}
