//! The hardened command's own `execve` carries the tail's secret in `r10`, `r8` and `r9`, the
//! registers `execve` does not read (`sandbox::seccomp::seal`). The secret stays out of the
//! command's reach only if the new program starts with those registers cleared: one that read
//! them at its entry point could execute again, admitted by its own filter. The x86_64 kernel
//! clears every general register at `execve` (`ELF_PLAT_INIT`); this test holds the sandbox to
//! that on the real kernel.
//!
//! The command is a static ELF of 147 bytes, written here: at its entry point it ORs `r10`,
//! `r8` and `r9` together and exits 1 when the result is not zero, 0 when it is. A control
//! program that tests `rsp` instead (never zero) shows that the check can fail.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use policy_runtime::ToolPolicy;
use sandbox::runner::{run, RunOptions};
use sandbox::Profile;

#[path = "support/kernel.rs"]
mod kernel;

const HELPER: &str = env!("CARGO_BIN_EXE_policy-sandbox");

/// Where the program is loaded, and its entry point (after the two headers).
const BASE: u64 = 0x40_0000;
const HEADERS: usize = 64 + 56;

/// A static x86_64 ELF executable whose code is `first` (the instruction that puts the value
/// to test in `rdi`) followed by: `or rdi, r8; or rdi, r9; test rdi, rdi; setne dil;
/// movzx edi, dil; mov eax, 60 (exit); syscall`.
fn program(first: [u8; 3]) -> Vec<u8> {
    let mut code = first.to_vec();
    code.extend_from_slice(&[
        0x4c, 0x09, 0xc7, // or rdi, r8
        0x4c, 0x09, 0xcf, // or rdi, r9
        0x48, 0x85, 0xff, // test rdi, rdi
        0x40, 0x0f, 0x95, 0xc7, // setne dil
        0x40, 0x0f, 0xb6, 0xff, // movzx edi, dil
        0xb8, 0x3c, 0x00, 0x00, 0x00, // mov eax, 60
        0x0f, 0x05, // syscall
    ]);
    let size = (HEADERS + code.len()) as u64;
    let mut elf = Vec::with_capacity(size as usize);
    // The ELF header: 64-bit, little-endian, version 1, an executable for x86_64.
    elf.extend_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    elf.extend_from_slice(&2u16.to_le_bytes()); // e_type: ET_EXEC
    elf.extend_from_slice(&0x3eu16.to_le_bytes()); // e_machine: x86_64
    elf.extend_from_slice(&1u32.to_le_bytes()); // e_version
    elf.extend_from_slice(&(BASE + HEADERS as u64).to_le_bytes()); // e_entry
    elf.extend_from_slice(&64u64.to_le_bytes()); // e_phoff
    elf.extend_from_slice(&0u64.to_le_bytes()); // e_shoff
    elf.extend_from_slice(&0u32.to_le_bytes()); // e_flags
    for half in [64u16, 56, 1, 64, 0, 0] {
        // e_ehsize, e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx
        elf.extend_from_slice(&half.to_le_bytes());
    }
    // One loadable segment, read and execute, mapping the whole file at BASE.
    elf.extend_from_slice(&1u32.to_le_bytes()); // p_type: PT_LOAD
    elf.extend_from_slice(&5u32.to_le_bytes()); // p_flags: R | X
    for word in [0, BASE, BASE, size, size, 0x1000] {
        // p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_align
        elf.extend_from_slice(&word.to_le_bytes());
    }
    assert_eq!(elf.len(), HEADERS);
    elf.extend_from_slice(&code);
    elf
}

/// `mov rdi, r10`: the program tests `r10 | r8 | r9`.
const SECRET_REGISTERS: [u8; 3] = [0x4c, 0x89, 0xd7];
/// `mov rdi, rsp`: the control tests `rsp | r8 | r9`, never zero.
const STACK_POINTER: [u8; 3] = [0x48, 0x89, 0xe7];

fn write_program(dir: &Path, name: &str, first: [u8; 3]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, program(first)).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn the_sealed_execve_leaves_no_secret_in_the_new_programs_registers() {
    if !kernel::supports(Profile::Hardened) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(dir.path()).unwrap();
    let probe = write_program(&dir, "registers", SECRET_REGISTERS);
    let control = write_program(&dir, "control", STACK_POINTER);
    // Unconfined, the programs run and answer as built: the registers start cleared, the stack
    // pointer does not.
    let status = |path: &str| std::process::Command::new(path).status().unwrap().code();
    assert_eq!(status(&probe), Some(0), "the program's check, unconfined");
    assert_eq!(status(&control), Some(1), "the control's check, unconfined");
    // exec = deny: the hardened command's own execve is the sealed one.
    let policy = ToolPolicy::from_json_str(
        "registers",
        &format!(
            r#"{{"fs": {{"read": ["{}/**"]}}, "exec": "deny", "net": "deny"}}"#,
            dir.display()
        ),
    )
    .unwrap();
    let opts = RunOptions::default()
        .helper(HELPER)
        .profile(Profile::Hardened);
    let out = run(&policy, &[control.clone().into()], &opts).unwrap();
    assert_eq!(out.code, Some(1), "the control, sealed: {out:?}");
    // The run took the sealed path: its report names the secret as the exec rule's mechanism.
    let exec = out.plan.rules.iter().find(|r| r.rule.starts_with("exec"));
    assert!(
        exec.is_some_and(|r| r.by.iter().any(|b| b.contains("secret"))),
        "the exec rule is not sealed: {exec:?}"
    );
    for _ in 0..20 {
        let out = run(&policy, &[probe.clone().into()], &opts).unwrap();
        assert_eq!(
            out.code,
            Some(0),
            "the command started with the secret's registers not all zero: {out:?}"
        );
    }
}
