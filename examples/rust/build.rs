// Finds libinlay for the linker and bakes its directory into the binaries' RUNPATH, so
// that they run without LD_LIBRARY_PATH. Where the library is, first match wins:
//   1. INLAY_LIB_DIR: the directory holding libinlay.so (a build tree's capi/, or an
//      install prefix's lib/);
//   2. pkg-config's libdir of the `inlay` package (PKG_CONFIG_PATH=PREFIX/lib/pkgconfig
//      after `cmake --install build --prefix PREFIX`);
//   3. this checkout's own build tree, ../../build/capi (scripts/quickstart.sh's).
//
// It also measures the C structs of inlay.h with the C compiler (layout/layout.c) for the
// layout test (tests/layout.rs); without a C compiler that test says it cannot run.
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    for var in ["INLAY_LIB_DIR", "INLAY_INCLUDE_DIR", "PKG_CONFIG_PATH", "CC"] {
        println!("cargo:rerun-if-env-changed={}", var);
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=layout/layout.c");

    let lib_dir = find_library(&manifest);
    println!("cargo:rustc-link-search=native={}", lib_dir.display());
    println!("cargo:rustc-link-lib=dylib=inlay");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib_dir.display());
    // For crates depending on this one (links = "inlay"): DEP_INLAY_LIB_DIR in their
    // build scripts, since link-arg (the RUNPATH) does not reach their binaries.
    println!("cargo:lib_dir={}", lib_dir.display());
    let include_dir =
        env::var_os("INLAY_INCLUDE_DIR").map(PathBuf::from).unwrap_or_else(|| manifest.join("../../include"));
    println!("cargo:rerun-if-changed={}", include_dir.join("inlay/inlay.h").display());
    let layout = match measure_layout(&manifest, &include_dir, &out) {
        Ok(table) => format!("pub const C_LAYOUT: Result<&str, &str> = Ok(r#\"{}\"#);\n", table),
        Err(why) => {
            println!("cargo:warning=the struct layout test cannot run: {}", why);
            format!("pub const C_LAYOUT: Result<&str, &str> = Err({:?});\n", why)
        }
    };
    fs::write(out.join("c_layout.rs"), layout).expect("cannot write OUT_DIR/c_layout.rs");
}

fn find_library(manifest: &Path) -> PathBuf {
    let has_lib = |dir: &Path| dir.join("libinlay.so").exists();
    if let Some(dir) = env::var_os("INLAY_LIB_DIR") {
        let dir = PathBuf::from(dir);
        if !has_lib(&dir) {
            panic!("INLAY_LIB_DIR={} holds no libinlay.so", dir.display());
        }
        // Absolute, for the RUNPATH (a relative one would follow the working directory).
        return dir.canonicalize().unwrap_or(dir);
    }
    if let Some(dir) = pkg_config_libdir() {
        if has_lib(&dir) {
            return dir;
        }
    }
    let tree = manifest.join("../../build/capi");
    if has_lib(&tree) {
        return tree.canonicalize().unwrap_or(tree);
    }
    panic!(
        "libinlay.so not found: build inlay first (scripts/quickstart.sh, or cmake --build build --target inlay), \
         or set INLAY_LIB_DIR to the directory holding libinlay.so, or PKG_CONFIG_PATH to an install's \
         lib/pkgconfig (see README.md)"
    );
}

fn pkg_config_libdir() -> Option<PathBuf> {
    let output = Command::new("pkg-config").args(["--variable=libdir", "inlay"]).output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let dir = text.trim();
    if !output.status.success() || dir.is_empty() {
        return None;
    }
    Some(PathBuf::from(dir))
}

// Compiles and runs layout/layout.c; returns its table (one line per struct, field or
// constant of inlay.h).
fn measure_layout(manifest: &Path, include_dir: &Path, out: &Path) -> Result<String, String> {
    let cc = env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let exe = out.join("inlay_layout");
    let compiled = Command::new(&cc)
        .arg("-std=c11")
        .arg("-I")
        .arg(include_dir)
        .arg(manifest.join("layout/layout.c"))
        .arg("-o")
        .arg(&exe)
        .output()
        .map_err(|e| format!("cannot run the C compiler `{}`: {}", cc, e))?;
    if !compiled.status.success() {
        return Err(format!("`{}` failed on layout/layout.c: {}", cc, String::from_utf8_lossy(&compiled.stderr)));
    }
    let ran = Command::new(&exe).output().map_err(|e| format!("cannot run {}: {}", exe.display(), e))?;
    if !ran.status.success() {
        return Err(format!("{} failed", exe.display()));
    }
    String::from_utf8(ran.stdout).map_err(|_| "layout output is not UTF-8".to_string())
}
