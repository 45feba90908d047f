//! The `warden` binary: everything happens in `warden_cli::main`.

fn main() -> std::process::ExitCode {
    warden_cli::main()
}
