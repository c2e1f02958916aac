//! The classification table: what one simple command does (its level), which of its
//! arguments are paths and how it uses them (its roles), and the arguments that make a safe
//! program run another one.
//!
//! Programs are looked up by their base name (`/usr/bin/git` is `git`). A program the table
//! does not know is level 3 (destructive), and each of its path-like arguments (absolute,
//! `./x`, `../x`, `~/x`, anything with a `/`, also after `--opt=`) is judged as a write, the
//! strictest role.

use super::shell::Word;
use super::Level;
use crate::tool::Access;

/// What the classifier found in one simple command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Class {
    /// The command's level.
    pub level: Level,
    /// Why it has that level, for the model (`` `git push` reaches the network ``).
    pub why: String,
    /// Arguments that are paths, with how the program uses them.
    pub paths: Vec<(Word, Access)>,
    /// A command that this one runs (`sudo CMD`, `env CMD`, `xargs CMD`, `sh -c STRING`).
    pub inner: Option<Inner>,
    /// How it touches its standard input and output, for the pipe rules.
    pub io: Io,
    /// A new working directory for the commands after it (`cd DIR`, literal only).
    pub chdir: Option<Word>,
    /// Sends a file's content to the network (`curl -d @file`, `scp file host:`).
    pub uploads: Option<String>,
    /// Its inner command gets arguments from its input (`xargs`): their paths are unknown.
    pub args_from_input: bool,
    /// The directory its relative paths are relative to, when not the working directory
    /// (`git -C DIR`).
    pub base: Option<Word>,
}

/// A command run by another one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Inner {
    /// The remaining words are a command (`sudo`, `env`, `nice`, `timeout`, `xargs`).
    Argv(Vec<Word>),
    /// A shell string (`sh -c STRING`).
    Shell(String),
}

/// The pipe-relevant behaviour of a command.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Io {
    /// Its output comes from the network (`curl URL`, `wget -O-`, `nc`).
    pub network_output: bool,
    /// Its output is decoded data (`base64 -d`, `xxd -r`, `openssl enc -d`).
    pub decoded_output: bool,
    /// It runs its standard input as a program (`sh`, `bash`, `python` with no script).
    pub runs_stdin: bool,
}

/// A denial found while classifying: a built-in rule (level 6) or an unjudgeable construct.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Always denied, with why.
    Always(String),
    /// Cannot be judged, with why.
    Unjudgeable(String),
}

impl Class {
    fn new(level: Level, why: impl Into<String>) -> Class {
        Class {
            level,
            why: why.into(),
            paths: Vec::new(),
            inner: None,
            io: Io::default(),
            chdir: None,
            uploads: None,
            args_from_input: false,
            base: None,
        }
    }

    pub(crate) fn with(level: Level, why: impl Into<String>) -> Class {
        Class::new(level, why)
    }

    fn with_paths(mut self, words: impl IntoIterator<Item = Word>, access: Access) -> Class {
        self.paths.extend(words.into_iter().map(|w| (w, access)));
        self
    }
}

/// The base name of a program word (`/usr/bin/git` → `git`).
pub(crate) fn base_name(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// Environment variables whose value makes a program run another program or load code.
const PROGRAM_VARIABLES: &[&str] = &[
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_EDITOR",
    "GIT_PAGER",
    "GIT_ASKPASS",
    "GIT_EXTERNAL_DIFF",
    "GIT_EXEC_PATH",
    "GIT_PROXY_COMMAND",
    "GIT_TEMPLATE_DIR",
    "GIT_CONFIG",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "SSH_ASKPASS",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "MANPAGER",
    "BROWSER",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "BASH_ENV",
    "ENV",
    "PROMPT_COMMAND",
    "SHELLOPTS",
    "PS4",
    "IFS",
    "PATH",
    "PERL5OPT",
    "PERL5LIB",
    "PYTHONSTARTUP",
    "PYTHONPATH",
    "PYTHONHOME",
    "NODE_OPTIONS",
    "RUBYOPT",
    "RUSTC_WRAPPER",
    "RUSTC",
    "CARGO_BUILD_RUSTC_WRAPPER",
    "MAKEFLAGS",
    "TAR_OPTIONS",
    "RSYNC_RSH",
    "CURL_HOME",
    "WGETRC",
];

/// Judges `NAME=value` (before a command, or as `export NAME=value`).
pub(crate) fn check_assignment(name: &str, _value: &Word) -> Result<(), Refusal> {
    let runs = PROGRAM_VARIABLES.contains(&name)
        || name.starts_with("GIT_CONFIG_KEY_")
        || name.starts_with("GIT_CONFIG_VALUE_")
        || name.starts_with("BASH_FUNC_");
    if runs {
        return Err(Refusal::Always(format!(
            "setting `{name}` makes programs run or load other code"
        )));
    }
    Ok(())
}

/// The operands of an argument list: the indices of the words that are not options, given the
/// options that take a separate value. `--` ends the options.
fn operands(args: &[Word], value_opts: &[&str]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut only_operands = false;
    while i < args.len() {
        let a = args[i].text.as_str();
        if only_operands || a == "-" || !a.starts_with('-') {
            out.push(i);
        } else if a == "--" {
            only_operands = true;
        } else if value_opts.contains(&a) {
            i += 1;
        }
        i += 1;
    }
    out
}

/// The value of an option, as `-o VALUE`, `-oVALUE` (short), `--opt VALUE` or `--opt=VALUE`.
fn option_values<'a>(args: &'a [Word], names: &[&str]) -> Vec<&'a Word> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].text.as_str();
        if a == "--" {
            break;
        }
        for n in names {
            if a == *n {
                if let Some(v) = args.get(i + 1) {
                    out.push(v);
                }
            }
        }
        i += 1;
    }
    out
}

/// `--opt=VALUE` or `-oVALUE` forms: the value part.
fn glued_values(args: &[Word], names: &[&str]) -> Vec<Word> {
    let mut out = Vec::new();
    for a in args {
        if a.text == "--" {
            break;
        }
        for n in names {
            let rest = if n.starts_with("--") {
                a.text.strip_prefix(&format!("{n}="))
            } else {
                a.text.strip_prefix(n).filter(|r| !r.is_empty())
            };
            if let Some(v) = rest {
                out.push(Word {
                    text: v.to_string(),
                    tilde: v.starts_with('~'),
                    glob: a.glob,
                });
            }
        }
    }
    out
}

fn values(args: &[Word], names: &[&str]) -> Vec<Word> {
    let mut out: Vec<Word> = option_values(args, names).into_iter().cloned().collect();
    out.extend(glued_values(args, names));
    out
}

fn has(args: &[Word], names: &[&str]) -> bool {
    args.iter()
        .take_while(|a| a.text != "--")
        .any(|a| names.contains(&a.text.as_str()))
}

/// Whether a short option letter appears in a cluster (`-rf` has `r` and `f`).
fn has_short(args: &[Word], letter: char, long: &str) -> bool {
    args.iter().take_while(|a| a.text != "--").any(|a| {
        a.text == long
            || (a.text.starts_with('-')
                && !a.text.starts_with("--")
                && a.text[1..].contains(letter))
    })
}

fn pick(args: &[Word], idx: &[usize]) -> Vec<Word> {
    idx.iter().map(|&i| args[i].clone()).collect()
}

/// Whether an argument looks like a path (for programs without a roles row).
pub(crate) fn path_like(w: &Word) -> bool {
    let t = w.text.as_str();
    w.tilde
        || t.starts_with('/')
        || t.starts_with("./")
        || t.starts_with("../")
        || t == "."
        || t == ".."
        || t.contains('/')
}

fn always(why: impl Into<String>) -> Result<Class, Refusal> {
    Err(Refusal::Always(why.into()))
}

fn unjudgeable(why: impl Into<String>) -> Result<Class, Refusal> {
    Err(Refusal::Unjudgeable(why.into()))
}

/// Classifies one simple command: `words[0]` is the program.
pub(crate) fn classify(words: &[Word]) -> Result<Class, Refusal> {
    let Some(program) = words.first() else {
        return Ok(Class::new(Level::ReadOnly, "no command"));
    };
    if program.glob || program.tilde {
        return unjudgeable(format!(
            "the program `{}` is a pattern; name it literally",
            program.text
        ));
    }
    let name = base_name(&program.text);
    let args = &words[1..];
    let c = match name {
        // Shell builtins the policy cannot see through.
        "eval" | "source" | "." | "exec" | "alias" | "trap" | "enable" | "fc" | "coproc"
        | "let" => {
            return unjudgeable(format!(
                "`{name}` runs code the policy cannot see before it runs"
            ))
        }
        "export" | "declare" | "typeset" | "local" | "readonly" => {
            for a in args {
                if let Some((var, value)) = a.text.split_once('=') {
                    check_assignment(var, &Word::literal(value))?;
                }
            }
            if has(args, &["-f", "-F"]) {
                return unjudgeable(format!(
                    "`{name} -f` exports functions, which are not judged"
                ));
            }
            Class::new(Level::ReadOnly, format!("`{name}` sets shell variables"))
        }
        "cd" | "pushd" | "popd" => {
            let target = operands(args, &[]).first().map(|&i| args[i].clone());
            let mut c = Class::new(Level::ReadOnly, format!("`{name}` changes directory"));
            if let Some(t) = &target {
                c.paths.push((t.clone(), Access::Read));
            }
            c.chdir = target;
            c
        }
        "true" | "false" | ":" | "echo" | "printf" | "pwd" | "whoami" | "id" | "date" | "uname"
        | "seq" | "sleep" | "test" | "[" | "which" | "type" | "hostname" | "basename"
        | "dirname" | "expr" | "tr" | "yes" | "env" | "printenv" | "set" | "shopt" | "umask"
        | "wait" | "jobs" | "getopts" | "shift" | "read" | "unset" | "return" | "exit"
        | "break" | "continue" | "hash" | "nproc" | "locale" | "tty" | "groups" | "arch" => {
            return wrapper_or(name, args, || {
                Class::new(Level::ReadOnly, format!("`{name}` only reads"))
            })
        }
        "cat" | "head" | "tail" | "wc" | "ls" | "stat" | "file" | "du" | "df" | "diff" | "cmp"
        | "tac" | "nl" | "od" | "hexdump" | "strings" | "sha256sum" | "sha1sum" | "sha512sum"
        | "md5sum" | "cksum" | "b2sum" | "less" | "more" | "tree" | "realpath" | "readlink"
        | "paste" | "join" | "comm" | "column" | "fold" | "rev" | "cut" | "uniq" | "lsof"
        | "iconv" | "fmt" | "pr" | "expand" | "unexpand" | "ps" | "free" | "uptime" => {
            let idx = operands(
                args,
                &[
                    "-n",
                    "-c",
                    "-d",
                    "-f",
                    "-b",
                    "-w",
                    "-s",
                    "-t",
                    "-I",
                    "--block-size",
                    "-B",
                    "-L",
                    "-P",
                ],
            );
            Class::new(Level::ReadOnly, format!("`{name}` only reads"))
                .with_paths(pick(args, &idx), Access::Read)
        }
        "base64" | "xxd" => {
            let decodes = has(args, &["-d", "--decode", "-D", "-r", "-revert"]);
            let idx = operands(args, &["-w", "-c", "-g", "-l", "-s", "-o"]);
            let mut c = Class::new(Level::ReadOnly, format!("`{name}` only reads"))
                .with_paths(pick(args, &idx).into_iter().take(1), Access::Read);
            if name == "xxd" && idx.len() > 1 {
                c.level = Level::ProjectWrite;
                c.why = "`xxd` writes its output file".into();
                c.paths.push((args[idx[1]].clone(), Access::Write));
            }
            c.io.decoded_output = decodes;
            c
        }
        "openssl" => {
            let decodes = has(args, &["-d", "base64"])
                || args
                    .first()
                    .is_some_and(|a| a.text == "enc" && has(args, &["-d"]));
            let mut c = Class::new(Level::ReadOnly, "`openssl` computes");
            c.paths.extend(
                values(args, &["-in"])
                    .into_iter()
                    .map(|w| (w, Access::Read)),
            );
            let out = values(args, &["-out"]);
            if !out.is_empty() {
                c.level = Level::ProjectWrite;
                c.why = "`openssl -out` writes a file".into();
                c.paths.extend(out.into_iter().map(|w| (w, Access::Write)));
            }
            if has(args, &["s_client", "s_server", "ocsp"]) {
                c.level = Level::Network;
                c.why = "`openssl s_client` reaches the network".into();
                c.io.network_output = true;
            }
            c.io.decoded_output = decodes;
            c
        }
        "sort" => {
            let idx = operands(args, &["-k", "-t", "-o", "-S", "-T", "--output"]);
            let mut c = Class::new(Level::ReadOnly, "`sort` only reads")
                .with_paths(pick(args, &idx), Access::Read);
            let out = values(args, &["-o", "--output"]);
            if !out.is_empty() {
                c.level = Level::ProjectWrite;
                c.why = "`sort -o` writes a file".into();
                c.paths.extend(out.into_iter().map(|w| (w, Access::Write)));
            }
            c
        }
        "grep" | "egrep" | "fgrep" | "rg" | "ag" | "ack" => {
            let value_opts = [
                "-e",
                "-f",
                "-m",
                "-A",
                "-B",
                "-C",
                "-g",
                "-t",
                "-T",
                "-j",
                "-M",
                "--type",
                "--glob",
                "--max-count",
                "--regexp",
                "--file",
                "--include",
                "--exclude",
                "-d",
                "-D",
            ];
            let idx = operands(args, &value_opts);
            let pattern_given = has(args, &["-e", "-f", "--regexp", "--file"])
                || !glued_values(args, &["--regexp", "--file"]).is_empty();
            let files = if pattern_given {
                &idx[..]
            } else {
                idx.get(1..).unwrap_or(&[])
            };
            let mut c = Class::new(Level::ReadOnly, format!("`{name}` only reads"))
                .with_paths(pick(args, files), Access::Read);
            c.paths.extend(
                values(args, &["-f", "--file"])
                    .into_iter()
                    .map(|w| (w, Access::Read)),
            );
            if has(args, &["--pre"]) || !glued_values(args, &["--pre"]).is_empty() {
                return always(format!("`{name} --pre` runs a program on every file"));
            }
            c
        }
        "jq" | "yq" => {
            let idx = operands(
                args,
                &[
                    "--arg",
                    "--argjson",
                    "--slurpfile",
                    "--rawfile",
                    "-f",
                    "--from-file",
                    "--indent",
                ],
            );
            let files = idx.get(1..).unwrap_or(&[]);
            Class::new(Level::ReadOnly, format!("`{name}` only reads"))
                .with_paths(pick(args, files), Access::Read)
        }
        "awk" | "gawk" | "mawk" | "nawk" => {
            let idx = operands(args, &["-f", "-v", "-F", "--file", "--assign"]);
            let program_from_file = has(args, &["-f", "--file"]);
            let (program, files) = if program_from_file {
                (None, &idx[..])
            } else {
                (idx.first().map(|&i| &args[i]), idx.get(1..).unwrap_or(&[]))
            };
            let mut c = Class::new(Level::ReadOnly, format!("`{name}` only reads"))
                .with_paths(pick(args, files), Access::Read);
            c.paths.extend(
                values(args, &["-f", "--file"])
                    .into_iter()
                    .map(|w| (w, Access::Read)),
            );
            let opaque = program_from_file
                || program.is_some_and(|p| {
                    p.text.contains("system")
                        || p.text.contains('|')
                        || p.text.contains('>')
                        || p.text.contains("getline")
                });
            if opaque {
                c.level = Level::Destructive;
                c.why = format!("this `{name}` program can run commands or write files (`system`, `|`, `>`, `getline`, or a program file)");
            }
            c
        }
        "sed" => {
            let value_opts = ["-e", "-f", "-l", "--expression", "--file"];
            let idx = operands(args, &value_opts);
            let script_given = has(args, &["-e", "-f", "--expression", "--file"]);
            let script = if script_given {
                None
            } else {
                idx.first().map(|&i| args[i].text.clone())
            };
            let files = if script_given {
                &idx[..]
            } else {
                idx.get(1..).unwrap_or(&[])
            };
            let in_place = args.iter().take_while(|a| a.text != "--").any(|a| {
                a.text == "--in-place"
                    || a.text.starts_with("--in-place=")
                    || (a.text.starts_with("-i") && !a.text.starts_with("--"))
                    || (a.text.starts_with('-')
                        && !a.text.starts_with("--")
                        && a.text.contains('i')
                        && !a.text.contains('e'))
            });
            let mut scripts: Vec<String> = values(args, &["-e", "--expression"])
                .into_iter()
                .map(|w| w.text)
                .collect();
            scripts.extend(script);
            if scripts.iter().any(|s| sed_runs_or_writes(s)) || has(args, &["-f", "--file"]) {
                return unjudgeable("this `sed` script may run commands (`e`) or write files (`w`, `W`); it is not judged");
            }
            if in_place {
                Class::new(Level::ProjectWrite, "`sed -i` edits files in place")
                    .with_paths(pick(args, files), Access::Write)
            } else {
                Class::new(Level::ReadOnly, "`sed` only reads")
                    .with_paths(pick(args, files), Access::Read)
            }
        }
        "find" => find(args)?,
        "tee" => {
            let idx = operands(args, &[]);
            Class::new(Level::ProjectWrite, "`tee` writes files")
                .with_paths(pick(args, &idx), Access::Write)
        }
        "mkdir" | "touch" => {
            let idx = operands(
                args,
                &["-m", "-d", "-r", "-t", "--mode", "--reference", "--date"],
            );
            Class::new(Level::ProjectWrite, format!("`{name}` creates files"))
                .with_paths(pick(args, &idx), Access::Write)
        }
        "cp" | "mv" | "ln" | "install" => copy_like(name, args),
        "patch" => {
            let idx = operands(
                args,
                &[
                    "-p",
                    "-i",
                    "-o",
                    "-d",
                    "-r",
                    "-B",
                    "-F",
                    "--input",
                    "--output",
                    "--directory",
                ],
            );
            let mut c = Class::new(Level::ProjectWrite, "`patch` edits files")
                .with_paths(pick(args, &idx), Access::Write);
            c.paths.extend(
                values(args, &["-i", "--input"])
                    .into_iter()
                    .map(|w| (w, Access::Read)),
            );
            c.paths.extend(
                values(args, &["-o", "--output", "-d", "--directory", "-r"])
                    .into_iter()
                    .map(|w| (w, Access::Write)),
            );
            c
        }
        "dd" => dd(args)?,
        "tar" | "bsdtar" => tar(args)?,
        "zip" | "unzip" | "gzip" | "gunzip" | "bzip2" | "bunzip2" | "xz" | "unxz" | "zstd"
        | "unzstd" | "7z" => {
            if name == "unzip" {
                let idx = operands(args, &["-d", "-x", "-P"]);
                let mut c = Class::new(Level::ProjectWrite, "`unzip` writes files")
                    .with_paths(pick(args, &idx).into_iter().take(1), Access::Read);
                c.paths.extend(
                    values(args, &["-d"])
                        .into_iter()
                        .map(|w| (w, Access::Write)),
                );
                if values(args, &["-d"]).is_empty() {
                    c.paths.push((Word::literal("."), Access::Write));
                }
                c
            } else {
                let idx = operands(args, &["-S", "--suffix", "-b", "-n", "-P", "-T"]);
                if has(args, &["-T", "--unzip-command", "-TT"]) {
                    return always(format!("`{name} -T/-TT` runs a program"));
                }
                let to_stdout = has_short(args, 'c', "--stdout")
                    || has_short(args, 'l', "--list")
                    || has_short(args, 't', "--test");
                let access = if to_stdout && name != "zip" {
                    Access::Read
                } else {
                    Access::Write
                };
                let level = if access == Access::Read {
                    Level::ReadOnly
                } else {
                    Level::ProjectWrite
                };
                let mut c = Class::new(level, format!("`{name}` rewrites files"))
                    .with_paths(pick(args, &idx), access);
                c.io.decoded_output = to_stdout
                    && (name.starts_with("gunzip") || has_short(args, 'd', "--decompress"));
                c
            }
        }
        "rm" | "rmdir" | "shred" | "unlink" | "truncate" => remove(name, args)?,
        "chmod" | "chown" | "chgrp" | "chattr" | "setfacl" => {
            let idx = operands(args, &["--reference", "-m", "-x"]);
            let targets: Vec<Word> = pick(args, idx.get(1..).unwrap_or(&[]));
            let recursive = has_short(args, 'R', "--recursive");
            if recursive && targets.iter().any(is_root_or_home) {
                return always(format!("`{name} -R` on `/` or the home directory"));
            }
            Class::new(
                Level::Destructive,
                format!("`{name}` changes permissions or owners"),
            )
            .with_paths(targets, Access::Write)
        }
        "kill" | "pkill" | "killall" | "crontab" | "at" | "batch" | "renice" | "ipcrm" => {
            Class::new(
                Level::Destructive,
                format!("`{name}` affects other processes or schedules commands"),
            )
        }
        "sudo" | "doas" | "pkexec" | "su" | "runuser" | "chroot" | "setpriv" | "sg" | "newgrp"
        | "unshare" | "nsenter" | "capsh" => privileged(name, args)?,
        "mkfs" | "mke2fs" | "mkswap" | "wipefs" | "fdisk" | "sfdisk" | "parted" | "gdisk"
        | "sgdisk" | "shutdown" | "reboot" | "halt" | "poweroff" | "kexec" | "telinit" | "init"
        | "insmod" | "rmmod" | "modprobe" | "swapoff" => {
            return always(format!(
                "`{name}` acts on disks, kernel modules or the whole machine"
            ))
        }
        n if n.starts_with("mkfs.") || n.starts_with("mkfs_") => {
            return always(format!("`{name}` formats a filesystem"))
        }
        "systemctl" | "service" | "loginctl" => {
            if args.iter().any(|a| {
                matches!(
                    a.text.as_str(),
                    "poweroff"
                        | "reboot"
                        | "halt"
                        | "kexec"
                        | "suspend"
                        | "hibernate"
                        | "rescue"
                        | "emergency"
                )
            }) {
                return always(format!("`{name}` stops or restarts the machine"));
            }
            Class::new(
                Level::Privileged,
                format!("`{name}` manages system services"),
            )
        }
        "mount" | "umount" | "iptables" | "nft" | "ip" | "sysctl" | "useradd" | "userdel"
        | "usermod" | "passwd" | "visudo" | "docker" | "podman" | "kubectl" | "ctr" | "nerdctl"
        | "apt" | "apt-get" | "dnf" | "yum" | "apk" | "pacman" | "snap" => Class::new(
            Level::Privileged,
            format!("`{name}` needs or grants system privileges"),
        ),
        "git" => super::git::classify(args)?,
        "curl" => curl(args)?,
        "wget" => wget(args)?,
        "ssh" | "scp" | "sftp" => ssh_like(name, args)?,
        "rsync" => rsync(args)?,
        "nc" | "ncat" | "netcat" | "socat" | "telnet" | "ftp" | "tftp" | "ping" | "dig"
        | "nslookup" | "host" | "traceroute" | "whois" | "gh" | "aws" | "gcloud" | "az" => {
            if (matches!(name, "nc" | "ncat" | "netcat")
                && has(args, &["-e", "-c", "--exec", "--sh-exec", "--lua-exec"]))
                || (name == "socat"
                    && args.iter().any(|a| {
                        let t = a.text.to_ascii_uppercase();
                        t.starts_with("EXEC:") || t.starts_with("SYSTEM:") || t.contains(",EXEC:")
                    }))
            {
                return always(format!("`{name}` with a program to run on the connection"));
            }
            let mut c = Class::new(Level::Network, format!("`{name}` reaches the network"));
            c.io.network_output = true;
            c
        }
        "npm" | "yarn" | "pnpm" | "bun" => package_manager(name, args),
        "npx" | "pnpx" | "bunx" => Class::new(
            Level::Network,
            format!("`{name}` downloads and runs a package"),
        ),
        "pip" | "pip3" | "pipx" | "uv" | "poetry" | "gem" | "bundle" | "composer" | "conda" => {
            package_manager(name, args)
        }
        "cargo" => cargo(args),
        "go" => {
            let sub = args
                .iter()
                .find(|a| !a.text.starts_with('-'))
                .map(|a| a.text.as_str())
                .unwrap_or("");
            match sub {
                "build" | "test" | "vet" | "run" | "fmt" | "list" | "version" | "env" | "doc"
                | "tool" => Class::new(Level::Build, format!("`go {sub}` builds or tests")),
                "get" | "install" | "mod" | "work" => {
                    Class::new(Level::Network, format!("`go {sub}` downloads modules"))
                }
                "clean" => Class::new(Level::Destructive, "`go clean` deletes build outputs"),
                _ => Class::new(
                    Level::Destructive,
                    format!("`go {sub}` is not in the classification table"),
                ),
            }
        }
        "make" | "gmake" | "cmake" | "ninja" | "meson" | "pytest" | "tox" | "nox" | "mvn"
        | "gradle" | "ctest" | "rustc" | "gcc" | "g++" | "cc" | "c++" | "clang" | "clang++"
        | "javac" | "tsc" | "jest" | "mocha" | "vitest" | "rspec" | "rustfmt" | "clippy-driver"
        | "eslint" | "ruff" | "mypy" | "black" | "prettier" | "shellcheck" => {
            if name == "make" && has(args, &["--eval", "-E"]) {
                return unjudgeable("`make --eval` runs text the policy cannot see");
            }
            Class::new(Level::Build, format!("`{name}` builds or tests"))
        }
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "ash" | "mksh" | "fish" | "busybox" | "csh"
        | "tcsh" => shell(name, args)?,
        "python" | "python3" | "python2" | "perl" | "ruby" | "node" | "deno" | "php" | "lua"
        | "Rscript" | "tclsh" | "osascript" | "pwsh" => interpreter(name, args)?,
        "nice" | "nohup" | "timeout" | "time" | "stdbuf" | "ionice" | "setsid" | "command"
        | "builtin" | "xargs" | "watch" | "flock" | "taskset" | "chrt" | "caffeinate"
        | "strace" | "ltrace" | "gdb" | "valgrind" | "script" => {
            return wrapper_or(name, args, || {
                Class::new(Level::ReadOnly, format!("`{name}` alone runs nothing"))
            })
        }
        "vi" | "vim" | "nvim" | "emacs" | "nano" | "ed" | "ex" => Class::new(
            Level::Destructive,
            format!("`{name}` is an editor that can run commands"),
        ),
        _ => {
            let targets: Vec<Word> = args
                .iter()
                .flat_map(|a| {
                    let mut v = Vec::new();
                    if path_like(a) && !a.text.starts_with('-') {
                        v.push(a.clone());
                    }
                    if let Some((_, value)) = a.text.split_once('=') {
                        let w = Word {
                            text: value.to_string(),
                            tilde: value.starts_with('~'),
                            glob: a.glob,
                        };
                        if path_like(&w) {
                            v.push(w);
                        }
                    }
                    v
                })
                .collect();
            let mut c = Class::new(
                Level::Destructive,
                format!("`{name}` is not in the classification table; unknown programs count as level 3"),
            )
            .with_paths(targets, Access::Write);
            if program.text.contains('/') {
                c.paths.push((program.clone(), Access::Read));
            }
            c
        }
    };
    Ok(c)
}

/// Whether a sed script has a command that runs programs (`e`, `s///e`) or writes files
/// (`w`, `W`, `s///w`); read conservatively: any such letter where a command or flag may
/// stand counts.
fn sed_runs_or_writes(script: &str) -> bool {
    // A command letter follows the start, `;`, a newline, `}` or an address; a flag ends a
    // `s` command. Without a full sed parser, any `e`, `w` or `W` outside a regular
    // expression or replacement text is taken as one.
    let mut chars = script.chars().peekable();
    let mut in_s = 0u8; // parts of an `s` command left to skip
    let mut delim = '/';
    let mut prev_cmd_pos = true;
    while let Some(c) = chars.next() {
        if in_s > 0 {
            if c == '\\' {
                chars.next();
            } else if c == delim {
                in_s -= 1;
            }
            continue;
        }
        match c {
            's' | 'y' if prev_cmd_pos => {
                if let Some(d) = chars.next() {
                    delim = d;
                    in_s = 2;
                }
                prev_cmd_pos = false;
            }
            '/' | '\\' if prev_cmd_pos => {
                // An address regex: skip it.
                for d in chars.by_ref() {
                    if d == '/' {
                        break;
                    }
                }
            }
            'e' | 'w' | 'W' | 'r' | 'R' => return true,
            ';' | '\n' | '{' | '}' | ' ' | '!' => prev_cmd_pos = true,
            c if c.is_ascii_digit() || c == ',' || c == '$' => {}
            _ => prev_cmd_pos = false,
        }
    }
    false
}

fn is_root_or_home(w: &Word) -> bool {
    if w.tilde {
        let rest = w.text.trim_start_matches('~');
        return rest.trim_matches('/').is_empty() || rest.trim_matches('/') == "*";
    }
    if !w.text.starts_with('/') {
        return false;
    }
    let normal = crate::path::normalize(&w.text);
    if normal == "/" {
        return true;
    }
    // `/*` and `/usr`, `/home`: a top-level directory, or everything at the top.
    let trimmed = normal.trim_end_matches('/');
    trimmed.matches('/').count() <= 1 && (w.glob || !trimmed[1..].is_empty())
}

fn remove(name: &str, args: &[Word]) -> Result<Class, Refusal> {
    let idx = operands(
        args,
        &["-s", "--size", "-n", "--iterations", "-r", "--reference"],
    );
    let targets = pick(args, &idx);
    let recursive = name == "rm"
        && (has_short(args, 'r', "--recursive") || has_short(args, 'R', "--recursive"));
    if has(args, &["--no-preserve-root"]) {
        return always(format!("`{name} --no-preserve-root`"));
    }
    if recursive && targets.iter().any(is_root_or_home) {
        return always("`rm -r` of `/`, a top-level directory or the home directory");
    }
    if name == "truncate" {
        let sized: Vec<Word> = targets;
        return Ok(Class::new(Level::Destructive, "`truncate` cuts files")
            .with_paths(sized, Access::Write));
    }
    Ok(
        Class::new(Level::Destructive, format!("`{name}` deletes files"))
            .with_paths(targets, Access::Write),
    )
}

fn copy_like(name: &str, args: &[Word]) -> Class {
    let idx = operands(
        args,
        &[
            "-t",
            "-S",
            "--suffix",
            "-m",
            "-o",
            "-g",
            "--mode",
            "--owner",
            "--group",
            "--target-directory",
        ],
    );
    let mut c = Class::new(Level::ProjectWrite, format!("`{name}` writes files"));
    let target_dir = values(args, &["-t", "--target-directory"]);
    let source_access = if name == "mv" {
        Access::Write
    } else {
        Access::Read
    };
    let ops = pick(args, &idx);
    if !target_dir.is_empty() {
        c.paths
            .extend(target_dir.into_iter().map(|w| (w, Access::Write)));
        c.paths.extend(ops.into_iter().map(|w| (w, source_access)));
    } else if let Some((dest, sources)) = ops.split_last() {
        c.paths
            .extend(sources.iter().cloned().map(|w| (w, source_access)));
        c.paths.push((dest.clone(), Access::Write));
        if ops.len() == 1 && name == "ln" {
            c.paths.push((Word::literal("."), Access::Write));
        }
    }
    c
}

fn dd(args: &[Word]) -> Result<Class, Refusal> {
    let mut c = Class::new(Level::ProjectWrite, "`dd` copies data");
    for a in args {
        if let Some(v) = a.text.strip_prefix("if=") {
            c.paths.push((
                Word {
                    text: v.into(),
                    tilde: v.starts_with('~'),
                    glob: a.glob,
                },
                Access::Read,
            ));
        }
        if let Some(v) = a.text.strip_prefix("of=") {
            if is_block_device(v) {
                return always(format!("`dd` writing to the block device `{v}`"));
            }
            c.paths.push((
                Word {
                    text: v.into(),
                    tilde: v.starts_with('~'),
                    glob: a.glob,
                },
                Access::Write,
            ));
        }
    }
    if !args.iter().any(|a| a.text.starts_with("of=")) {
        c.level = Level::ReadOnly;
        c.why = "`dd` without `of=` only reads".into();
    }
    Ok(c)
}

/// `/dev/sda`, `/dev/nvme0n1`, `/dev/mapper/x`, `/dev/disk/...`: block devices.
pub(crate) fn is_block_device(path: &str) -> bool {
    let p = crate::path::normalize(path);
    let Some(dev) = p.strip_prefix("/dev/") else {
        return false;
    };
    [
        "sd", "hd", "vd", "xvd", "nvme", "mmcblk", "loop", "dm-", "md", "mapper/", "disk/", "sr",
        "nbd", "zram", "ram",
    ]
    .iter()
    .any(|prefix| dev.starts_with(prefix))
}

fn find(args: &[Word]) -> Result<Class, Refusal> {
    let first_expr = args
        .iter()
        .position(|a| a.text.starts_with('-') || a.text == "(" || a.text == "!" || a.text == ")")
        .unwrap_or(args.len());
    // `-H`, `-L`, `-P` come before the roots.
    let roots: Vec<Word> = args[..first_expr].to_vec();
    let expr = &args[first_expr..];
    let leading: Vec<Word> = expr
        .iter()
        .take_while(|a| {
            matches!(
                a.text.as_str(),
                "-H" | "-L" | "-P" | "-O0" | "-O1" | "-O2" | "-O3" | "-D"
            )
        })
        .cloned()
        .collect();
    let (roots, expr): (Vec<Word>, &[Word]) = if !leading.is_empty() && roots.is_empty() {
        let rest = &expr[leading.len()..];
        let end = rest
            .iter()
            .position(|a| a.text.starts_with('-') || a.text == "(" || a.text == "!")
            .unwrap_or(rest.len());
        (rest[..end].to_vec(), &rest[end..])
    } else {
        (roots, expr)
    };
    if let Some(a) = expr
        .iter()
        .find(|a| matches!(a.text.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir"))
    {
        return always(format!(
            "`find {}` runs a program on every file it finds",
            a.text
        ));
    }
    let roots = if roots.is_empty() {
        vec![Word::literal(".")]
    } else {
        roots
    };
    let mut c = Class::new(Level::ReadOnly, "`find` only reads");
    if has(expr, &["-delete"]) {
        c = Class::new(Level::Destructive, "`find -delete` deletes files")
            .with_paths(roots, Access::Write);
    } else {
        c = c.with_paths(roots, Access::Read);
    }
    for (i, a) in expr.iter().enumerate() {
        if matches!(
            a.text.as_str(),
            "-fprint" | "-fprint0" | "-fprintf" | "-fls"
        ) {
            if let Some(f) = expr.get(i + 1) {
                c.level = c.level.max(Level::ProjectWrite);
                c.paths.push((f.clone(), Access::Write));
            }
        }
        if matches!(
            a.text.as_str(),
            "-newer" | "-anewer" | "-cnewer" | "-samefile"
        ) {
            if let Some(f) = expr.get(i + 1) {
                c.paths.push((f.clone(), Access::Read));
            }
        }
    }
    Ok(c)
}

fn tar(args: &[Word]) -> Result<Class, Refusal> {
    const RUNS: &[&str] = &[
        "--checkpoint-action",
        "--to-command",
        "--use-compress-program",
        "--info-script",
        "--new-volume-script",
        "--rsh-command",
        "--rmt-command",
        "-I",
        "-F",
    ];
    for a in args.iter().take_while(|a| a.text != "--") {
        if let Some(r) = RUNS.iter().find(|r| {
            a.text == **r || (r.starts_with("--") && a.text.starts_with(&format!("{r}=")))
        }) {
            return always(format!("`tar {r}` runs a program"));
        }
    }
    // Old style: the first argument is a cluster of letters without a dash (`tar xzf a.tgz`).
    let mut letters = String::new();
    let mut files_after: Vec<Word> = Vec::new();
    let mut rest_start = 0;
    if let Some(first) = args.first() {
        if !first.text.starts_with('-') && first.text.chars().all(|c| c.is_ascii_alphabetic()) {
            letters.push_str(&first.text);
            rest_start = 1;
            let wanted = first
                .text
                .chars()
                .filter(|c| matches!(c, 'f' | 'C' | 'T' | 'X' | 'b' | 'N' | 'K' | 'g'))
                .count();
            files_after = args[1..].iter().take(wanted).cloned().collect();
            rest_start += wanted;
        }
    }
    let rest = &args[rest_start..];
    for a in rest.iter().take_while(|a| a.text != "--") {
        if a.text.starts_with('-') && !a.text.starts_with("--") {
            letters.push_str(&a.text[1..]);
        }
    }
    let long = |n: &str| rest.iter().any(|a| a.text == n);
    let create = letters.contains('c')
        || letters.contains('r')
        || letters.contains('u')
        || long("--create")
        || long("--append")
        || long("--update");
    let extract = letters.contains('x') || long("--extract") || long("--get");
    if letters.contains('F') || letters.contains('I') {
        return always("`tar -F/-I` runs a program");
    }
    let mut archives = values(rest, &["-f", "--file"]);
    let mut dirs = values(rest, &["-C", "--directory"]);
    // Old-style values follow the cluster in the order of their letters.
    if !files_after.is_empty() {
        let order: Vec<char> = letters
            .chars()
            .filter(|c| matches!(c, 'f' | 'C' | 'T' | 'X' | 'b' | 'N' | 'K' | 'g'))
            .collect();
        for (c, w) in order.iter().zip(files_after) {
            match c {
                'f' => archives.push(w),
                'C' => dirs.push(w),
                _ => {}
            }
        }
    }
    let ops = pick(
        rest,
        &operands(
            rest,
            &[
                "-f",
                "--file",
                "-C",
                "--directory",
                "-T",
                "-X",
                "-b",
                "-N",
                "-K",
                "-g",
                "--exclude",
                "-H",
                "--format",
            ],
        ),
    );
    let mut c;
    if create {
        c = Class::new(Level::ProjectWrite, "`tar` creates an archive");
        c.paths
            .extend(archives.into_iter().map(|w| (w, Access::Write)));
        c.paths.extend(dirs.into_iter().map(|w| (w, Access::Read)));
        c.paths.extend(ops.into_iter().map(|w| (w, Access::Read)));
    } else if extract {
        c = Class::new(Level::ProjectWrite, "`tar -x` writes the archive's files");
        c.paths
            .extend(archives.into_iter().map(|w| (w, Access::Read)));
        if dirs.is_empty() {
            c.paths.push((Word::literal("."), Access::Write));
        }
        c.paths.extend(dirs.into_iter().map(|w| (w, Access::Write)));
    } else {
        c = Class::new(Level::ReadOnly, "`tar -t` only lists");
        c.paths
            .extend(archives.into_iter().map(|w| (w, Access::Read)));
    }
    Ok(c)
}

fn curl(args: &[Word]) -> Result<Class, Refusal> {
    if has(args, &["-K", "--config"]) || !glued_values(args, &["--config", "-K"]).is_empty() {
        return unjudgeable(
            "`curl -K/--config` reads more options from a file the policy cannot see",
        );
    }
    let mut c = Class::new(Level::Network, "`curl` reaches the network");
    c.io.network_output = true;
    // Data options: `@file` (or `<file` for -F) sends a file.
    // `--data-raw` takes `@` literally.
    for v in values(
        args,
        &["-d", "--data", "--data-binary", "--data-ascii", "--json"],
    ) {
        if let Some(file) = v.text.strip_prefix('@') {
            upload(&mut c, file, "`curl -d @FILE` sends a file");
        }
    }
    for v in values(args, &["--data-urlencode"]) {
        if let Some((_, file)) = v.text.split_once('@') {
            upload(
                &mut c,
                file,
                "`curl --data-urlencode NAME@FILE` sends a file",
            );
        }
    }
    for v in values(args, &["-F", "--form"]) {
        if let Some((_, value)) = v.text.split_once('=') {
            if let Some(file) = value.strip_prefix('@').or_else(|| value.strip_prefix('<')) {
                let file = file.split(';').next().unwrap_or(file);
                upload(&mut c, file, "`curl -F NAME=@FILE` sends a file");
            }
        }
    }
    for v in values(args, &["-T", "--upload-file"]) {
        upload(&mut c, &v.text.clone(), "`curl -T FILE` uploads a file");
    }
    for v in values(
        args,
        &[
            "-o",
            "--output",
            "-D",
            "--dump-header",
            "-c",
            "--cookie-jar",
            "--trace",
            "--trace-ascii",
            "--stderr",
            "--output-dir",
        ],
    ) {
        c.paths.push((v, Access::Write));
    }
    if has(args, &["-O", "--remote-name", "--remote-name-all", "-J"]) {
        c.paths.push((Word::literal("."), Access::Write));
    }
    for v in values(
        args,
        &[
            "-b",
            "--cookie",
            "--cacert",
            "--cert",
            "--key",
            "--netrc-file",
            "-E",
        ],
    ) {
        if path_like(&v) {
            c.paths.push((v, Access::Read));
        }
    }
    Ok(c)
}

/// Records a file sent to the network: judged as a read, and flagged for approval (`-` is
/// standard input: the pipe rules see it).
fn upload(c: &mut Class, file: &str, why: &str) {
    if file == "-" || file.is_empty() {
        c.uploads = Some("it sends its standard input to the network".into());
        return;
    }
    c.paths.push((
        Word {
            text: file.to_string(),
            tilde: file.starts_with('~'),
            glob: false,
        },
        Access::Read,
    ));
    c.uploads = Some(format!("{why} (`{file}`)"));
}

fn wget(args: &[Word]) -> Result<Class, Refusal> {
    if has(args, &["-e", "--execute", "--use-askpass", "--config"])
        || !glued_values(args, &["--execute", "--use-askpass", "--config"]).is_empty()
    {
        return always("`wget -e/--execute/--use-askpass/--config` can run programs or read options the policy cannot see");
    }
    let mut c = Class::new(Level::Network, "`wget` reaches the network");
    let out = values(
        args,
        &[
            "-O",
            "--output-document",
            "-P",
            "--directory-prefix",
            "-o",
            "--output-file",
            "-a",
            "--append-output",
        ],
    );
    // Its output may reach a pipe in forms the table does not spell out (`-qO-`): count it
    // as network output always.
    c.io.network_output = true;
    let writes_cwd = out.is_empty();
    c.paths.extend(
        out.into_iter()
            .filter(|w| w.text != "-")
            .map(|w| (w, Access::Write)),
    );
    if writes_cwd {
        c.paths.push((Word::literal("."), Access::Write));
    }
    for v in values(args, &["--post-file", "--body-file"]) {
        let file = v.text.clone();
        upload(&mut c, &file, "`wget --post-file FILE` sends a file");
    }
    for v in values(args, &["-i", "--input-file"]) {
        c.paths.push((v, Access::Read));
    }
    Ok(c)
}

fn ssh_options_run(name: &str, args: &[Word]) -> Result<(), Refusal> {
    const RUNS: &[&str] = &[
        "proxycommand",
        "localcommand",
        "permitlocalcommand",
        "knownhostscommand",
        "proxyuseFdpass",
        "remotecommand",
        "match",
    ];
    let mut opts = values(args, &["-o"]);
    opts.extend(glued_values(args, &["-o"]));
    for o in opts {
        let key = o
            .text
            .split(['=', ' '])
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        if RUNS.iter().any(|r| r.eq_ignore_ascii_case(&key)) {
            return Err(Refusal::Always(format!("`{name} -o {key}` runs a program")));
        }
    }
    if has(args, &["-F"]) || !glued_values(args, &["-F"]).is_empty() {
        return Err(Refusal::Unjudgeable(format!(
            "`{name} -F` reads a configuration the policy cannot see (it can run programs)"
        )));
    }
    if name != "ssh" && (has(args, &["-S"]) || !glued_values(args, &["-S"]).is_empty()) {
        return Err(Refusal::Always(format!(
            "`{name} -S` runs a program in place of ssh"
        )));
    }
    Ok(())
}

fn ssh_like(name: &str, args: &[Word]) -> Result<Class, Refusal> {
    ssh_options_run(name, args)?;
    let mut c = Class::new(Level::Network, format!("`{name}` reaches the network"));
    c.io.network_output = true;
    for v in values(args, &["-i"]) {
        c.paths.push((v, Access::Read));
    }
    if name == "scp" {
        let idx = operands(args, &["-i", "-o", "-P", "-F", "-S", "-c", "-l", "-J"]);
        let ops = pick(args, &idx);
        if let Some((dest, sources)) = ops.split_last() {
            let remote = |w: &Word| is_remote(&w.text);
            for s in sources.iter().filter(|w| !remote(w)) {
                c.paths.push((s.clone(), Access::Read));
                if remote(dest) {
                    c.uploads = Some(format!("`scp` sends `{}` to another host", s.text));
                }
            }
            if !remote(dest) {
                c.paths.push((dest.clone(), Access::Write));
            }
        }
    }
    Ok(c)
}

fn is_remote(arg: &str) -> bool {
    if arg.starts_with('/') || arg.starts_with("./") {
        return false;
    }
    arg.contains("::")
        || arg.starts_with("rsync://")
        || arg.split('/').next().is_some_and(|head| head.contains(':'))
}

fn rsync(args: &[Word]) -> Result<Class, Refusal> {
    if has(args, &["-e", "--rsh", "--rsync-path"])
        || !glued_values(args, &["-e", "--rsh", "--rsync-path"]).is_empty()
    {
        return always("`rsync -e/--rsh/--rsync-path` runs a program");
    }
    if args.iter().any(|a| {
        a.text.starts_with('-')
            && !a.text.starts_with("--")
            && a.text.contains('e')
            && a.text.len() > 1
            && a.text[1..].chars().all(|c| c.is_ascii_alphabetic())
            && a.text[1..].contains('e')
    }) {
        return always("`rsync -e` runs a program");
    }
    let idx = operands(
        args,
        &[
            "--exclude",
            "--include",
            "--filter",
            "-f",
            "--port",
            "--files-from",
            "--exclude-from",
            "--include-from",
            "-T",
            "--temp-dir",
            "--partial-dir",
            "--chmod",
            "--bwlimit",
            "-M",
            "--remote-option",
        ],
    );
    let ops = pick(args, &idx);
    let remote = ops.iter().any(|w| is_remote(&w.text));
    let mut c = if remote {
        let mut c = Class::new(
            Level::Network,
            "`rsync` to or from another host reaches the network",
        );
        c.io.network_output = true;
        c
    } else {
        Class::new(Level::ProjectWrite, "`rsync` copies files")
    };
    if let Some((dest, sources)) = ops.split_last() {
        for s in sources.iter().filter(|w| !is_remote(&w.text)) {
            c.paths.push((s.clone(), Access::Read));
            if is_remote(&dest.text) {
                c.uploads = Some(format!("`rsync` sends `{}` to another host", s.text));
            }
        }
        if !is_remote(&dest.text) {
            c.paths.push((dest.clone(), Access::Write));
        }
    }
    if has(
        args,
        &[
            "--delete",
            "--delete-after",
            "--delete-before",
            "--remove-source-files",
        ],
    ) {
        c.level = c.level.max(Level::Destructive);
    }
    Ok(c)
}

fn package_manager(name: &str, args: &[Word]) -> Class {
    let sub = args
        .iter()
        .find(|a| !a.text.starts_with('-'))
        .map(|a| a.text.as_str())
        .unwrap_or("");
    let network = [
        "install",
        "i",
        "add",
        "ci",
        "publish",
        "update",
        "upgrade",
        "download",
        "fetch",
        "login",
        "adduser",
        "unpublish",
        "deprecate",
        "dist-tag",
        "owner",
        "exec",
        "dlx",
        "create",
        "init",
        "outdated",
        "search",
        "view",
        "info",
        "audit",
        "sync",
        "lock",
        "push",
        "tag",
        "access",
    ];
    if network.contains(&sub) {
        return Class::new(
            Level::Network,
            format!("`{name} {sub}` reaches the package registry"),
        );
    }
    match sub {
        "test" | "t" | "run" | "run-script" | "build" | "start" | "lint" | "check"
        | "exec-script" => Class::new(Level::Build, format!("`{name} {sub}` builds or tests")),
        "list" | "ls" | "show" | "freeze" | "help" | "version" | "--version" | "config" | "why"
        | "explain" | "root" | "bin" | "prefix" => {
            Class::new(Level::ReadOnly, format!("`{name} {sub}` only reads"))
        }
        "uninstall" | "remove" | "rm" | "prune" | "cache" | "clean" => Class::new(
            Level::Destructive,
            format!("`{name} {sub}` deletes packages"),
        ),
        _ => Class::new(
            Level::Destructive,
            format!("`{name} {sub}` is not in the classification table"),
        ),
    }
}

fn cargo(args: &[Word]) -> Class {
    let sub = args
        .iter()
        .find(|a| !a.text.starts_with('-') && !a.text.starts_with('+'))
        .map(|a| a.text.as_str())
        .unwrap_or("");
    match sub {
        "build" | "b" | "check" | "c" | "test" | "t" | "bench" | "run" | "r" | "clippy" | "doc"
        | "d" | "metadata" | "tree" | "nextest" | "miri" | "llvm-cov" | "expand" | "version"
        | "help" | "locate-project" | "pkgid" | "verify-project" => {
            Class::new(Level::Build, format!("`cargo {sub}` builds or tests"))
        }
        "fmt" | "fix" | "new" | "init" | "vendor" | "generate-lockfile" => Class::new(
            Level::ProjectWrite,
            format!("`cargo {sub}` writes within the project"),
        ),
        "install" | "publish" | "login" | "logout" | "owner" | "yank" | "search" | "fetch"
        | "update" | "add" | "remove" | "uninstall" | "info" => Class::new(
            Level::Network,
            format!("`cargo {sub}` reaches the registry"),
        ),
        "clean" => Class::new(Level::Destructive, "`cargo clean` deletes build outputs"),
        _ => Class::new(
            Level::Destructive,
            format!("`cargo {sub}` is not in the classification table"),
        ),
    }
}

fn privileged(name: &str, args: &[Word]) -> Result<Class, Refusal> {
    let mut c = Class::new(
        Level::Privileged,
        format!("`{name}` runs with other privileges"),
    );
    match name {
        "su" | "runuser" => {
            if let Some(cmd) = values(args, &["-c", "--command"]).into_iter().next() {
                c.inner = Some(Inner::Shell(cmd.text));
            }
        }
        "sudo" | "doas" | "pkexec" | "chroot" | "setpriv" | "unshare" | "nsenter" | "capsh"
        | "sg" => {
            let value_opts = [
                "-u",
                "-g",
                "-C",
                "-D",
                "-h",
                "-p",
                "-r",
                "-t",
                "-U",
                "--user",
                "--group",
                "--chdir",
                "--prompt",
                "-T",
                "--close-from",
            ];
            if let Some(&start) = operands(args, &value_opts).first() {
                let start = if name == "chroot" { start + 1 } else { start };
                if start < args.len() {
                    c.inner = Some(Inner::Argv(args[start..].to_vec()));
                }
            }
        }
        _ => {}
    }
    Ok(c)
}

fn shell(name: &str, args: &[Word]) -> Result<Class, Refusal> {
    let args = if name == "busybox" {
        match args.first() {
            Some(a) if matches!(a.text.as_str(), "sh" | "ash" | "bash") => &args[1..],
            Some(_) => {
                return Ok(Class::new(
                    Level::Destructive,
                    "`busybox` applets are not in the classification table",
                ))
            }
            None => args,
        }
    } else {
        args
    };
    let mut i = 0;
    let mut stdin_mode = false;
    while i < args.len() {
        let a = args[i].text.as_str();
        if a == "--" {
            i += 1;
            break;
        }
        if a == "-o" || a == "+o" || a == "-O" || a == "+O" || a == "--rcfile" || a == "--init-file"
        {
            if matches!(a, "--rcfile" | "--init-file") {
                return unjudgeable(format!("`{name} {a}` runs a file the policy cannot see"));
            }
            i += 2;
            continue;
        }
        if a.starts_with('-') || a.starts_with('+') {
            if a.starts_with('-') && !a.starts_with("--") && a.contains('s') {
                stdin_mode = true;
            }
            if a.starts_with('-') && !a.starts_with("--") && a.contains('c') {
                let Some(script) = args.get(i + 1) else {
                    return unjudgeable(format!("`{name} -c` without a command"));
                };
                let mut c = Class::new(Level::ReadOnly, format!("`{name} -c` runs its command"));
                c.inner = Some(Inner::Shell(script.text.clone()));
                return Ok(c);
            }
            i += 1;
            continue;
        }
        break;
    }
    match args.get(i) {
        Some(script) if !stdin_mode => {
            let mut c = Class::new(
                Level::Destructive,
                format!(
                    "`{name} {}` runs a script the policy cannot see; scripts count as level 3",
                    script.text
                ),
            );
            c.paths.push((script.clone(), Access::Read));
            Ok(c)
        }
        _ => {
            let mut c = Class::new(
                Level::Destructive,
                format!("`{name}` runs the program on its standard input"),
            );
            c.io.runs_stdin = true;
            Ok(c)
        }
    }
}

fn interpreter(name: &str, args: &[Word]) -> Result<Class, Refusal> {
    let module = values(args, &["-m"]).into_iter().next();
    if let Some(m) = module {
        return Ok(match m.text.as_str() {
            "pytest" | "unittest" | "mypy" | "black" | "ruff" | "tox" | "nox" | "compileall"
            | "py_compile" | "doctest" => Class::new(
                Level::Build,
                format!("`{name} -m {}` builds or tests", m.text),
            ),
            "pip" | "ensurepip" | "http.server" | "smtplib" | "ftplib" | "urllib.request" => {
                Class::new(
                    Level::Network,
                    format!("`{name} -m {}` reaches the network", m.text),
                )
            }
            "json.tool" | "tokenize" | "pydoc" | "site" | "platform" | "sysconfig" => Class::new(
                Level::ReadOnly,
                format!("`{name} -m {}` only reads", m.text),
            ),
            other => Class::new(
                Level::Destructive,
                format!("`{name} -m {other}` is not in the classification table"),
            ),
        });
    }
    let inline = has(args, &["-c", "-e", "-E", "--eval", "-r", "-p", "--print"]);
    let idx = operands(
        args,
        &[
            "-c", "-e", "-E", "--eval", "-W", "-X", "-I", "-r", "-p", "-M", "-x",
        ],
    );
    if inline {
        return Ok(Class::new(
            Level::Destructive,
            format!("inline `{name}` code is not judged; it counts as level 3"),
        ));
    }
    match idx.first() {
        Some(&i) if args[i].text != "-" => {
            let mut c = Class::new(
                Level::Destructive,
                format!(
                    "`{name} {}` runs a script the policy cannot see; scripts count as level 3",
                    args[i].text
                ),
            );
            c.paths.push((args[i].clone(), Access::Read));
            Ok(c)
        }
        _ => {
            let mut c = Class::new(
                Level::Destructive,
                format!("`{name}` runs the program on its standard input"),
            );
            c.io.runs_stdin = true;
            Ok(c)
        }
    }
}

/// Programs that run another command: the rest of their words is classified too.
fn wrapper_or(name: &str, args: &[Word], alone: impl FnOnce() -> Class) -> Result<Class, Refusal> {
    let value_opts: &[&str] = match name {
        "env" => &["-u", "--unset", "-C", "--chdir", "-a", "--argv0"],
        "nice" => &["-n", "--adjustment"],
        "timeout" => &["-s", "--signal", "-k", "--kill-after"],
        "stdbuf" => &["-i", "-o", "-e"],
        "ionice" => &["-c", "-n", "-p", "-P", "-u"],
        "xargs" => &[
            "-I",
            "-i",
            "-n",
            "-P",
            "-d",
            "-a",
            "-E",
            "-L",
            "-s",
            "--arg-file",
            "--delimiter",
            "--max-args",
            "--max-procs",
            "--replace",
            "--max-lines",
            "--max-chars",
            "--eof",
        ],
        "flock" => &["-w", "-E", "--timeout", "--conflict-exit-code"],
        "watch" => &["-n", "--interval", "-d"],
        "taskset" => &["-p"],
        "strace" | "ltrace" => &["-o", "-e", "-p", "-s", "-u"],
        "script" => &["-c", "--command", "-O", "-I"],
        _ => &[],
    };
    if name == "env"
        && (has(args, &["-S", "--split-string"])
            || args
                .iter()
                .any(|a| a.text.starts_with("-S") && a.text.len() > 2))
    {
        return unjudgeable("`env -S` splits a string into a command the policy does not parse");
    }
    if name == "command" && has(args, &["-v", "-V"]) {
        return Ok(Class::new(
            Level::ReadOnly,
            "`command -v` only looks a name up",
        ));
    }
    if matches!(name, "watch" | "script" | "gdb") {
        return Ok(Class::new(
            Level::Destructive,
            format!("`{name}` runs commands the policy does not parse"),
        ));
    }
    let mut idx = operands(args, value_opts).into_iter();
    let mut start = idx.next();
    if name == "env" {
        // `env NAME=VALUE... CMD`.
        while let Some(i) = start {
            let Some((var, value)) = args[i].text.split_once('=') else {
                break;
            };
            check_assignment(var, &Word::literal(value))?;
            start = idx.next();
        }
    }
    if matches!(name, "timeout" | "chrt" | "taskset") {
        start = idx.next();
    }
    if name == "flock" {
        start = idx.next();
    }
    let Some(start) = start else {
        return Ok(alone());
    };
    if matches!(
        name,
        "echo"
            | "printf"
            | "true"
            | "false"
            | ":"
            | "pwd"
            | "whoami"
            | "id"
            | "date"
            | "uname"
            | "seq"
            | "sleep"
            | "test"
            | "["
            | "which"
            | "type"
            | "hostname"
            | "basename"
            | "dirname"
            | "expr"
            | "tr"
            | "yes"
            | "printenv"
            | "set"
            | "shopt"
            | "umask"
            | "wait"
            | "jobs"
            | "getopts"
            | "shift"
            | "read"
            | "unset"
            | "return"
            | "exit"
            | "break"
            | "continue"
            | "hash"
            | "nproc"
            | "locale"
            | "tty"
            | "groups"
            | "arch"
    ) {
        return Ok(alone());
    }
    let mut c = Class::new(
        Level::ReadOnly,
        format!("`{name}` runs the command after it"),
    );
    c.inner = Some(Inner::Argv(args[start..].to_vec()));
    if name == "xargs" {
        c.why = "`xargs` runs its command with arguments read from its input".into();
        c.args_from_input = true;
        for v in values(args, &["-a", "--arg-file"]) {
            c.paths.push((v, Access::Read));
        }
    }
    if name == "strace" || name == "ltrace" {
        for v in values(args, &["-o"]) {
            c.paths.push((v, Access::Write));
        }
    }
    Ok(c)
}
