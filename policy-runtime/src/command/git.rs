//! `git`: the level of each subcommand, and the options and configuration keys that make git
//! run another program (`-c core.sshCommand=...`, `--upload-pack`, `ext::` URLs, ...).

use super::classify::{path_like, Class, Refusal};
use super::shell::Word;
use super::Level;
use crate::tool::Access;

/// Configuration keys whose value git runs as a program, loads as configuration, or uses to
/// enable a transport that runs one. Patterns: `*` stands for one subsection.
const PROGRAM_KEYS: &[&str] = &[
    "core.sshcommand",
    "core.pager",
    "core.editor",
    "core.askpass",
    "core.fsmonitor",
    "core.hookspath",
    "core.gitproxy",
    "core.alternaterefscommand",
    "core.worktree",
    "credential.helper",
    "credential.*.helper",
    "diff.external",
    "diff.*.textconv",
    "diff.*.command",
    "merge.*.driver",
    "filter.*.clean",
    "filter.*.smudge",
    "filter.*.process",
    "sequence.editor",
    "gpg.program",
    "gpg.*.program",
    "uploadpack.packobjectshook",
    "alias.*",
    "pager.*",
    "interactive.difffilter",
    "web.browser",
    "browser.*.cmd",
    "browser.*.path",
    "difftool.*.cmd",
    "difftool.*.path",
    "mergetool.*.cmd",
    "mergetool.*.path",
    "man.*.cmd",
    "man.*.path",
    "remote.*.uploadpack",
    "remote.*.receivepack",
    "remote.*.vcs",
    "url.*.insteadof",
    "url.*.pushinsteadof",
    "protocol.allow",
    "protocol.*.allow",
    "include.path",
    "includeif.*.path",
    "init.templatedir",
    "sendemail.sendmailcmd",
    "sendemail.smtpserver",
    "sendemail.tocmd",
    "sendemail.cccmd",
    "ssh.variant",
    "http.proxy",
    "http.*.proxy",
];

/// Whether a configuration key (any case) runs or loads something.
pub(crate) fn key_runs_program(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    let parts: Vec<&str> = key.split('.').collect();
    PROGRAM_KEYS.iter().any(|pattern| {
        let p: Vec<&str> = pattern.split('.').collect();
        match (p.as_slice(), parts.as_slice()) {
            ([s, n], [ks, .., kn]) if *n == "*" => s == ks && !kn.is_empty(),
            ([s, n], [ks, kn]) => s == ks && n == kn,
            ([s, m, n], [ks, middle @ .., kn]) if *m == "*" => {
                s == ks && n == kn && !middle.is_empty()
            }
            _ => false,
        }
    })
}

fn check_key(setting: &str, how: &str) -> Result<(), Refusal> {
    let key = setting.split('=').next().unwrap_or(setting);
    if key_runs_program(key) {
        return Err(Refusal::Always(format!(
            "`git {how} {key}=...` makes git run another program or load other configuration"
        )));
    }
    Ok(())
}

/// Classifies `git ARGS`.
pub(crate) fn classify(args: &[Word]) -> Result<Class, Refusal> {
    let mut dirs: Vec<Word> = Vec::new();
    let mut i = 0;
    // Global options, before the subcommand.
    while i < args.len() {
        let a = args[i].text.as_str();
        match a {
            "-C" => {
                if let Some(d) = args.get(i + 1) {
                    dirs.push(d.clone());
                }
                i += 2;
            }
            "-c" => {
                if let Some(kv) = args.get(i + 1) {
                    check_key(&kv.text, "-c")?;
                }
                i += 2;
            }
            "--config-env" => {
                if let Some(kv) = args.get(i + 1) {
                    check_key(&kv.text, "--config-env")?;
                }
                i += 2;
            }
            "--git-dir" | "--work-tree" | "--namespace" | "--super-prefix" => {
                if let Some(d) = args.get(i + 1) {
                    dirs.push(d.clone());
                }
                i += 2;
            }
            _ if a.starts_with("--config-env=") => {
                check_key(&a["--config-env=".len()..], "--config-env")?;
                i += 1;
            }
            _ if a.starts_with("-c") && a.len() > 2 => {
                check_key(&a[2..], "-c")?;
                i += 1;
            }
            _ if a.starts_with("--exec-path=") => {
                return Err(Refusal::Always(
                    "`git --exec-path=DIR` runs git's programs from another directory".into(),
                ))
            }
            _ if a.starts_with("--git-dir=") || a.starts_with("--work-tree=") => {
                let v = &a[a.find('=').unwrap_or(0) + 1..];
                dirs.push(Word {
                    text: v.into(),
                    tilde: v.starts_with('~'),
                    glob: false,
                });
                i += 1;
            }
            _ if a.starts_with('-') => i += 1,
            _ => break,
        }
    }
    let sub = args.get(i).map(|w| w.text.as_str()).unwrap_or("");
    let rest = args.get(i + 1..).unwrap_or(&[]);
    let has = |names: &[&str]| {
        rest.iter()
            .take_while(|a| a.text != "--")
            .any(|a| names.contains(&a.text.as_str()))
    };
    let starts = |prefix: &str| {
        rest.iter()
            .take_while(|a| a.text != "--")
            .any(|a| a.text.starts_with(prefix))
    };

    for a in rest {
        if a.text.starts_with("ext::") || a.text.starts_with("fd::") {
            return Err(Refusal::Always(format!(
                "the git URL `{}` uses a transport that runs a program",
                a.text
            )));
        }
    }
    let runs = |what: &str| {
        Err(Refusal::Always(format!(
            "`git {sub} {what}` runs a program"
        )))
    };
    if has(&["--upload-pack", "--receive-pack", "--exec"])
        || starts("--upload-pack=")
        || starts("--receive-pack=")
        || starts("--exec=")
    {
        return runs("--upload-pack/--receive-pack/--exec");
    }
    match sub {
        "clone" if has(&["-u"]) => return runs("-u"),
        "clone" | "init" if has(&["--template"]) || starts("--template=") => {
            return Err(Refusal::Always(format!(
                "`git {sub} --template` installs hooks from a template directory"
            )))
        }
        "rebase" if has(&["-x", "--exec"]) => return runs("--exec"),
        "difftool" | "mergetool" if has(&["-x", "--extcmd"]) || starts("--extcmd=") => {
            return runs("--extcmd")
        }
        "grep"
            if has(&["-O", "--open-files-in-pager"])
                || starts("--open-files-in-pager=")
                || starts("-O") =>
        {
            return runs("--open-files-in-pager")
        }
        "submodule" if rest.iter().any(|a| a.text == "foreach") => return runs("foreach"),
        "bisect" if rest.first().is_some_and(|a| a.text == "run") => return runs("run"),
        "filter-branch" | "filter-repo" => return runs("(its filters)"),
        "send-email"
            if starts("--sendmail-cmd")
                || starts("--smtp-server=/")
                || starts("--to-cmd")
                || starts("--cc-cmd") =>
        {
            return runs("--sendmail-cmd/--to-cmd")
        }
        _ => {}
    }
    if sub == "clone" || sub == "config" {
        let mut next_is_value = false;
        for a in rest {
            if next_is_value {
                check_key(&a.text, "--config")?;
                next_is_value = false;
            }
            if a.text == "-c" || a.text == "--config" {
                next_is_value = true;
            } else if let Some(kv) = a.text.strip_prefix("--config=") {
                check_key(kv, "--config")?;
            }
        }
    }
    let (level, why): (Level, String) = match sub {
        "" | "status" | "log" | "diff" | "show" | "blame" | "annotate" | "ls-files" | "ls-tree" | "rev-parse"
        | "rev-list" | "describe" | "shortlog" | "grep" | "cat-file" | "whatchanged" | "help" | "version"
        | "for-each-ref" | "show-ref" | "show-branch" | "name-rev" | "merge-base" | "count-objects" | "fsck"
        | "check-ignore" | "check-attr" | "diff-tree" | "diff-files" | "diff-index" | "range-diff" | "cherry"
        | "var" | "verify-commit" | "verify-tag" | "format-patch" => (Level::ReadOnly, format!("`git {sub}` only reads")),
        "push" | "fetch" | "pull" | "clone" | "ls-remote" | "send-email" | "request-pull" | "daemon" | "instaweb"
        | "http-backend" | "svn" | "p4" | "cvsimport" => (Level::Network, format!("`git {sub}` reaches the network")),
        "submodule" => match rest.iter().find(|a| !a.text.starts_with('-')).map(|a| a.text.as_str()) {
            Some("status") | Some("summary") | None => (Level::ReadOnly, "`git submodule status` only reads".into()),
            Some("init") | Some("absorbgitdirs") | Some("set-branch") => (Level::ProjectWrite, "`git submodule init` writes the repository".into()),
            _ => (Level::Network, "`git submodule update/add/sync` reaches the network".into()),
        },
        "remote" => match rest.iter().find(|a| !a.text.starts_with('-')).map(|a| a.text.as_str()) {
            None | Some("show") | Some("get-url") => (Level::ReadOnly, "`git remote` only reads".into()),
            Some("update") | Some("prune") => (Level::Network, "`git remote update` reaches the network".into()),
            Some("remove") | Some("rm") => (Level::Destructive, "`git remote remove` deletes a remote".into()),
            _ => (Level::ProjectWrite, "`git remote add/set-url` writes the repository".into()),
        },
        "archive" if has(&["--remote"]) || starts("--remote=") => (Level::Network, "`git archive --remote` reaches the network".into()),
        "reset" | "clean" | "rm" | "gc" | "prune" | "update-ref" | "reflog" if !(sub == "reflog" && rest.first().is_none_or(|a| a.text == "show")) => {
            (Level::Destructive, format!("`git {sub}` can discard work"))
        }
        "restore" if !has(&["--staged", "-S"]) || has(&["--worktree", "-W"]) => {
            (Level::Destructive, "`git restore` discards changes in the working tree".into())
        }
        "checkout" | "switch" if has(&["-f", "--force", "--discard-changes", "."]) || rest.iter().any(|a| a.text == "--" || a.text == ".") => {
            (Level::Destructive, format!("`git {sub} --force`, `-- PATH` or `.` discards changes"))
        }
        "branch" | "tag" if has(&["-d", "-D", "--delete"]) => (Level::Destructive, format!("`git {sub} -d` deletes refs")),
        "branch" | "tag" if rest.iter().all(|a| a.text.starts_with('-')) => (Level::ReadOnly, format!("`git {sub}` lists")),
        "stash" => match rest.iter().find(|a| !a.text.starts_with('-')).map(|a| a.text.as_str()) {
            Some("list") | Some("show") => (Level::ReadOnly, "`git stash list` only reads".into()),
            Some("drop") | Some("clear") => (Level::Destructive, "`git stash drop/clear` deletes stashed work".into()),
            _ => (Level::ProjectWrite, "`git stash` writes the repository".into()),
        },
        "config" if has(&["--get", "--get-all", "--get-regexp", "--list", "-l", "--show-origin", "--get-urlmatch"]) || rest.iter().filter(|a| !a.text.starts_with('-')).count() < 2 => {
            (Level::ReadOnly, "`git config` reading only reads".into())
        }
        "config" => {
            if let Some(key) = rest.iter().find(|a| !a.text.starts_with('-')) {
                check_key(&key.text, "config")?;
            }
            (Level::ProjectWrite, "`git config KEY VALUE` writes configuration".into())
        }
        "add" | "commit" | "checkout" | "switch" | "merge" | "rebase" | "cherry-pick" | "revert" | "mv" | "init"
        | "apply" | "am" | "notes" | "worktree" | "restore" | "branch" | "tag" | "archive" | "bundle" | "stage"
        | "sparse-checkout" | "maintenance" | "repack" | "pack-refs" | "replace" | "update-index" | "write-tree"
        | "commit-tree" | "hash-object" | "mktag" | "mktree" | "read-tree" | "bisect" | "rerere" | "citool" | "merge-file" => {
            (Level::ProjectWrite, format!("`git {sub}` writes the repository"))
        }
        other => (
            Level::Destructive,
            format!("`git {other}` is not in the classification table (it may be an alias, which can run any program)"),
        ),
    };
    let access = if level == Level::ReadOnly {
        Access::Read
    } else {
        Access::Write
    };
    let mut c = Class::with(level, why);
    c.base = dirs.first().cloned();
    for d in dirs.iter().skip(1) {
        c.paths.push((d.clone(), access));
    }
    // The repository itself: the working directory (or `-C DIR`).
    c.paths.push((Word::literal("."), access));
    let mut after_dashdash = false;
    let mut skip_value = false;
    for a in rest {
        if skip_value {
            skip_value = false;
            continue;
        }
        if a.text == "--" {
            after_dashdash = true;
            continue;
        }
        if !after_dashdash
            && matches!(
                a.text.as_str(),
                "-m" | "-F" | "--file" | "-o" | "--output" | "-C" | "-c"
            )
        {
            if matches!(a.text.as_str(), "-F" | "--file") {
                c.paths.push((rest_value(rest, a), Access::Read));
            }
            if matches!(a.text.as_str(), "-o" | "--output") && sub != "clone" {
                c.paths.push((rest_value(rest, a), Access::Write));
            }
            skip_value = true;
            continue;
        }
        if let Some(v) = a.text.strip_prefix("--output=") {
            c.paths.push((
                Word {
                    text: v.into(),
                    tilde: v.starts_with('~'),
                    glob: false,
                },
                Access::Write,
            ));
            continue;
        }
        if a.text.contains("://")
            || (sub == "clone" && a.text.contains(':') && !a.text.starts_with('/'))
        {
            continue;
        }
        if after_dashdash || (!a.text.starts_with('-') && path_like(a)) {
            c.paths.push((a.clone(), access));
        }
    }
    if sub == "clone" {
        c.paths.retain(|(w, _)| w.text != ".");
        let ops: Vec<&Word> = rest.iter().filter(|a| !a.text.starts_with('-')).collect();
        match ops.get(1) {
            Some(dir) => c.paths.push(((*dir).clone(), Access::Write)),
            None => c.paths.push((Word::literal("."), Access::Write)),
        }
    }
    c.io.network_output = level == Level::Network && matches!(sub, "archive" | "ls-remote");
    Ok(c)
}

fn rest_value(rest: &[Word], opt: &Word) -> Word {
    rest.iter()
        .position(|w| std::ptr::eq(w, opt))
        .and_then(|i| rest.get(i + 1))
        .cloned()
        .unwrap_or_else(|| Word::literal("."))
}
