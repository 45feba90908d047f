//! The sandbox helper on its own: a small binary that starts faster and uses less memory than
//! `warden __sandbox-helper`, which it stands in for when it is installed beside `warden`.

fn main() {
    warden_sandbox::helper_main();
}
