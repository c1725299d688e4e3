//! `acptap completions` and `acptap man`: made from the command line's own definition, so every
//! command a user can type is completed and has a page, and both work while the config file is
//! broken (they are what a user reaches for when something is off).

use std::process::Command;

use crate::util::{Sandbox, acptap_bin};

/// Every visible command, as `acptap --help` lists it.
fn commands() -> Vec<String> {
    let help = Command::new(acptap_bin()).arg("--help").output().unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    let listed = help
        .split("Commands:")
        .nth(1)
        .and_then(|rest| rest.split("Options:").next())
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect::<Vec<_>>();
    assert!(listed.len() > 20, "{listed:?}");
    listed
}

/// `acptap ARGS` with a config file that does not parse: the answer must not need it.
fn acptap_with_broken_config(sb: &Sandbox, args: &[&str]) -> String {
    let config = sb.path("broken.toml");
    std::fs::write(&config, "this is = = not toml").unwrap();
    let out = Command::new(acptap_bin())
        .args(args)
        .env("ACPTAP_CONFIG", &config)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn bash_completes_every_command_and_its_options() {
    let sb = Sandbox::new();
    let script = sb.path("acptap.bash");
    std::fs::write(
        &script,
        acptap_with_broken_config(&sb, &["completions", "bash"]),
    )
    .unwrap();
    // Bash itself runs the script's completion function, as it would at a prompt.
    let complete = |words: &str, current: usize| -> Vec<String> {
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "source {}; COMP_WORDS=({words}); COMP_CWORD={current}; \
                 COMP_LINE='{words}'; COMP_POINT=${{#COMP_LINE}}; \
                 _acptap acptap \"${{COMP_WORDS[$COMP_CWORD]}}\" \"${{COMP_WORDS[$COMP_CWORD-1]}}\"; \
                 printf '%s\\n' \"${{COMPREPLY[@]}}\"",
                script.display()
            ))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    };
    let all = complete("acptap ''", 1);
    for command in commands() {
        assert!(
            all.contains(&command),
            "`acptap <TAB>` lacks {command}: {all:?}"
        );
    }
    let options = complete("acptap run --", 2);
    for option in ["--policy", "--label", "--grace", "--db"] {
        assert!(options.contains(&option.to_owned()), "{options:?}");
    }
}

#[test]
fn zsh_and_fish_scripts_name_every_command() {
    let sb = Sandbox::new();
    for shell in ["zsh", "fish"] {
        let script = acptap_with_broken_config(&sb, &["completions", shell]);
        for command in commands() {
            assert!(script.contains(&command), "{shell}: no {command}");
        }
    }
    let out = Command::new(acptap_bin())
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_manual_has_a_page_for_every_command() {
    let sb = Sandbox::new();
    let page = acptap_with_broken_config(&sb, &["man"]);
    assert!(page.contains(".TH acptap 1"), "{page}");
    let dir = sb.path("man1");
    let listed = acptap_with_broken_config(&sb, &["man", "--dir", dir.to_str().unwrap()]);
    let mut expected = vec!["acptap".to_owned()];
    expected.extend(commands().iter().map(|c| format!("acptap-{c}")));
    for name in &expected {
        let path = dir.join(format!("{name}.1"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(text.contains(&format!(".TH {name} 1")), "{name}");
        assert!(listed.contains(path.to_str().unwrap()), "{listed}");
        // In the top page, every command is listed (as roff writes a hyphen).
        if name != "acptap" {
            let listed_as = format!("{}(1)", name.replace('-', "\\-"));
            assert!(page.contains(&listed_as), "acptap.1 does not list {name}");
        }
    }
    assert!(
        !dir.join("acptap-demo-agent.1").exists(),
        "a hidden command has a page"
    );
    assert!(
        std::fs::read_to_string(dir.join("acptap-run.1"))
            .unwrap()
            .contains("policy")
    );
}

/// `acptap man --dir DIR`, whose stdout lists the pages written.
fn write_manual(dir: &std::path::Path) -> std::process::Output {
    Command::new(acptap_bin())
        .args(["man", "--dir"])
        .arg(dir)
        .output()
        .unwrap()
}

#[test]
fn every_page_a_page_refers_to_is_written_down_to_the_nested_commands() {
    let sb = Sandbox::new();
    let dir = sb.path("man1");
    let out = write_manual(&dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pages = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect::<Vec<_>>();
    for page in &pages {
        assert!(!page.contains("-help"), "a page for `help`: {pages:?}");
        let text = std::fs::read_to_string(dir.join(page)).unwrap();
        // SUBCOMMANDS names each as `acptap\-policy\-check(1)`: that page must be here.
        for word in text.split_whitespace() {
            let Some(name) = word.strip_suffix("(1)") else {
                continue;
            };
            let name = name.replace("\\-", "-");
            if name.starts_with("acptap") {
                assert!(
                    dir.join(format!("{name}.1")).exists(),
                    "{page} refers to {name}(1), which is not written: {pages:?}"
                );
            }
        }
    }
    let check = std::fs::read_to_string(dir.join("acptap-policy-check.1")).unwrap();
    assert!(check.contains(".TH acptap-policy-check 1"), "{check}");
    let synopsis = check
        .split(".SH SYNOPSIS")
        .nth(1)
        .and_then(|rest| rest.split(".SH").next())
        .unwrap();
    assert!(
        synopsis.contains("acptap policy check"),
        "the synopsis is not what a user types: {synopsis}"
    );
    let policy = std::fs::read_to_string(dir.join("acptap-policy.1")).unwrap();
    assert!(policy.contains("acptap\\-policy\\-check(1)"), "{policy}");
    assert!(!policy.contains("acptap\\-policy\\-help"), "{policy}");
    // The top page, on stdout, has no `help` command either.
    let top = acptap_with_broken_config(&sb, &["man"]);
    assert!(!top.contains("acptap\\-help"), "{top}");
}

#[test]
fn a_dir_that_is_a_file_is_refused_with_the_fix() {
    let sb = Sandbox::new();
    let file = sb.path("man1");
    std::fs::write(&file, "not a directory").unwrap();
    let out = write_manual(&file);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("not a directory"), "{stderr}");
    assert!(stderr.contains("man1"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a directory");
}

#[cfg(unix)]
#[test]
fn a_link_where_a_page_goes_is_replaced_not_written_through() {
    let sb = Sandbox::new();
    let dir = sb.path("man1");
    std::fs::create_dir(&dir).unwrap();
    let target = sb.path("precious");
    std::fs::write(&target, "keep me").unwrap();
    std::os::unix::fs::symlink(&target, dir.join("acptap.1")).unwrap();
    let out = write_manual(&dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
    let page = dir.join("acptap.1");
    assert!(
        std::fs::symlink_metadata(&page)
            .unwrap()
            .file_type()
            .is_file()
    );
    assert!(
        std::fs::read_to_string(&page)
            .unwrap()
            .contains(".TH acptap 1")
    );
}
