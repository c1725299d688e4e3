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
