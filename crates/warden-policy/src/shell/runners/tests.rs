//! Each construct of the table found, plain reads left alone, and what constructs write and
//! read seen.
use crate::shell::analyze;

/// What the one command of `line` was found to run, and its writes and reads.
fn found(line: &str) -> (Vec<String>, Vec<String>, Vec<String>) {
    let analysis = analyze(line);
    let cmd = analysis
        .commands
        .iter()
        .find(|c| !c.wrapper)
        .unwrap_or_else(|| panic!("{line}: {analysis:?}"));
    (cmd.executes.clone(), cmd.writes.clone(), cmd.reads.clone())
}

#[test]
fn each_construct_is_named() {
    for (line, word) in [
        ("awk 'BEGIN{system(\"id\")}'", "system()"),
        ("awk '{print | \"sh\"}' f", "pipes"),
        ("awk '{\"date\" | getline d}' f", "pipes"),
        ("awk -f prog.awk f", "-f"),
        ("awk -fprog.awk f", "-f"),
        ("gawk -e '@load \"x\"' f", "@load"),
        ("gawk --source='BEGIN{system(\"id\")}'", "system()"),
        ("awk '{print > $1}' f", "named when it runs"),
        ("sed -n 'e id' f", "(e)"),
        ("sed -n '/x/e id' f", "(e)"),
        ("sed -n '\\,x,e id' f", "(e)"),
        ("sed -e p -e '1e id' f", "(e)"),
        ("sed -ne '$e id' f", "(e)"),
        ("sed 's/x/id/e' f", "s///e"),
        ("sed -f script.sed f", "-f"),
        ("sed -nf script.sed f", "-f"),
        ("sed --file=script.sed f", "-f"),
        ("less +!id f", "+!"),
        ("less '+|id' f", "+!"),
        ("less -k keys f", "LESSOPEN"),
        ("man -P id ls", "-P"),
        ("man --pager=id ls", "-P"),
        ("man -Hfirefox ls", "browser"),
        ("man -C man.conf ls", "-C"),
        ("git --exec-path=/tmp log", "--exec-path"),
        ("git --git-dir=/tmp/other log", "--git-dir"),
        ("GIT_DIR=/tmp/other git log", "GIT_DIR"),
        (
            "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.pager GIT_CONFIG_VALUE_0=id git log",
            "GIT_CONFIG",
        ),
        ("git grep --open-files-in-pager=id x", "-O"),
        ("git grep -Oid x", "-O"),
        ("tar -xf a.tar --to-command=id", "--to-command"),
        ("tar -I id -xf a.tar", "--to-command"),
        (
            "tar --checkpoint-action=exec=id -cf a.tar src",
            "--to-command",
        ),
        ("zip -T -TT id a.zip f", "-TT"),
        ("rsync -e id src dst", "-e"),
        ("rsync --rsync-path=id src dst", "-e"),
        ("vim -es -c '!id'", "-c"),
        ("make --eval='x:=$(shell id)'", "--eval"),
        ("make SHELL=/tmp/evil", "SHELL="),
        ("shopt -s dotglob", "dotglob"),
    ] {
        let (executes, _, _) = found(line);
        assert!(
            executes.iter().any(|w| w.contains(word)),
            "{line}: {executes:?}"
        );
    }
}

#[test]
fn plain_reads_are_left_alone() {
    for line in [
        "awk '{print $1}' f",
        "awk -F, '{ if ($1 > 3 || $2 < 1) print $2 }' f",
        "sed -n '1,5p' f",
        "sed 's/a/b/g' f",
        "sed -i.bak 's/a/b/' f",
        "sed --sandbox 'e id' f",
        "less +G f",
        "man ls",
        "git --exec-path",
        "git log --oneline",
        "git grep -O x",
        "tar -tf a.tar",
        "zip -r a.zip src",
        "rsync -a src dst",
        "make test",
    ] {
        let (executes, _, _) = found(line);
        assert!(executes.is_empty(), "{line}: {executes:?}");
    }
}

#[test]
fn what_the_constructs_write_and_read_is_seen() {
    let (_, writes, _) = found("awk '{print > \".git/hooks/pre-commit\"}' f");
    assert!(
        writes.contains(&".git/hooks/pre-commit".to_owned()),
        "{writes:?}"
    );
    let (_, _, reads) = found("awk 'BEGIN{while ((getline l < \".env\") > 0) print l}'");
    assert!(reads.contains(&".env".to_owned()), "{reads:?}");
    let (_, writes, reads) = found("sed -n -e 'r .env' -e 'w out.txt' f");
    assert!(reads.contains(&".env".to_owned()), "{reads:?}");
    assert!(writes.contains(&"out.txt".to_owned()), "{writes:?}");
    let (_, _, reads) = found("git diff --no-index README.md .env");
    assert!(reads.contains(&".env".to_owned()), "{reads:?}");
    let (_, _, reads) = found("git log -p -- .env");
    assert!(reads.contains(&".env".to_owned()), "{reads:?}");
    let (_, writes, _) = found("tar -xf a.tar -C .git/hooks");
    assert!(writes.contains(&".git/hooks".to_owned()), "{writes:?}");
    let (_, writes, _) = found("unzip a.zip");
    assert!(writes.contains(&".".to_owned()), "{writes:?}");
    let (_, writes, _) = found("unzip -l a.zip");
    assert!(writes.is_empty(), "{writes:?}");
    let (_, writes, _) = found("less -o .envrc f");
    assert!(writes.contains(&".envrc".to_owned()), "{writes:?}");
}
