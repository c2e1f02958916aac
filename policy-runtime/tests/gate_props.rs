//! Property tests of the path gate: lexical normalization agrees with the kernel on
//! symlink-free trees, and `..` never carries a path out of a glob.

use std::path::Path;

use policy_runtime::gate::check_path;
use policy_runtime::path::normalize;
use policy_runtime::tool::Access;
use policy_runtime::ToolPolicy;
use proptest::prelude::*;

const SEGMENTS: &[&str] = &["a", "b", "out", "data", ".", "..", "", "x.txt"];

fn raw_path() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(SEGMENTS), 0..9)
        .prop_map(|segs| format!("/{}", segs.join("/")))
}

fn policy(root: &str) -> ToolPolicy {
    ToolPolicy::from_json_str(
        "prop",
        &format!(r#"{{"fs": {{"read": ["{root}/data/**"], "write": ["{root}/out/**", "{root}/a/*.txt"]}}}}"#),
    )
    .unwrap()
}

fn verdict(policy: &ToolPolicy, path: &str, access: Access) -> bool {
    check_path(policy, path, access, None).is_ok()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn raw_and_normalized_paths_get_the_same_verdict(raw in raw_path()) {
        let p = policy("");
        let normalized = normalize(&raw);
        for access in [Access::Read, Access::Write, Access::Unknown] {
            prop_assert_eq!(verdict(&p, &raw, access), verdict(&p, &normalized, access), "{} vs {}", raw, normalized);
        }
    }

    #[test]
    fn dot_dot_never_escapes_a_glob(raw in raw_path()) {
        let p = policy("");
        if verdict(&p, &raw, Access::Write) {
            let n = normalize(&raw);
            let inside = Path::new(&n).starts_with("/out") || (Path::new(&n).starts_with("/a") && n.ends_with(".txt"));
            prop_assert!(inside, "{} allowed as {}", raw, n);
        }
        if verdict(&p, &raw, Access::Read) {
            let n = normalize(&raw);
            prop_assert!(["/out", "/a", "/data"].iter().any(|r| Path::new(&n).starts_with(r)), "{} read as {}", raw, n);
        }
    }
}

/// On a real symlink-free tree where every directory exists, the kernel's resolution of a raw
/// path equals the lexical normalization, so the gate judges what the kernel will open.
#[test]
fn lexical_normalization_matches_the_kernel_on_a_real_tree() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let root_str = root.to_str().unwrap().to_string();
    // Every directory name in SEGMENTS exists at every level up to depth 4.
    fn build(at: &Path, depth: usize) {
        if depth == 0 {
            return;
        }
        for d in ["a", "b", "out", "data"] {
            let sub = at.join(d);
            std::fs::create_dir_all(&sub).unwrap();
            std::fs::write(sub.join("x.txt"), b"x").unwrap();
            build(&sub, depth - 1);
        }
    }
    build(&root, 4);
    let p = policy(&root_str);
    let compared = std::cell::Cell::new(0u32);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(1000));
    runner
        .run(&raw_path(), |rel| {
            let raw = format!("{root_str}{rel}");
            let lexical = normalize(&raw);
            // Only paths that stay inside the tree are comparable (the kernel would walk out).
            if !Path::new(&lexical).starts_with(&root) {
                return Ok(());
            }
            if let Ok(real) = std::fs::canonicalize(&raw) {
                compared.set(compared.get() + 1);
                prop_assert_eq!(real.to_str().unwrap(), lexical.as_str(), "raw {}", raw);
                for access in [Access::Read, Access::Write] {
                    prop_assert_eq!(
                        verdict(&p, &raw, access),
                        verdict(&p, real.to_str().unwrap(), access)
                    );
                }
            }
            Ok(())
        })
        .unwrap();
    // Most generated paths exist in the tree; a run that compared few would prove nothing.
    assert!(
        compared.get() > 200,
        "only {} paths were compared",
        compared.get()
    );
}
