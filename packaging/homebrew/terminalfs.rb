# Homebrew formula for terminalfs (macOS with macFUSE; also builds on Linux).
#
# Before publishing it in a tap, set `url` to the release tarball and `sha256` to its
# checksum (`shasum -a 256 terminalfs-0.1.0.tar.gz`); packaging/README.md has the steps.

# macFUSE is a cask, and formulae cannot depend on casks: this requirement checks that
# it is installed and lets the build find its libfuse, which fuser links on macOS.
class MacfuseInstalled < Requirement
  fatal true

  satisfy(build_env: false) { File.exist?("/usr/local/include/fuse/fuse.h") }

  env do
    ENV.append_path "PKG_CONFIG_PATH", "/usr/local/lib/pkgconfig"
    unless HOMEBREW_PREFIX.to_s == "/usr/local"
      ENV.append_path "HOMEBREW_LIBRARY_PATHS", "/usr/local/lib"
      ENV.append_path "HOMEBREW_INCLUDE_PATHS", "/usr/local/include/fuse"
    end
  end

  def message
    <<~EOS
      terminalfs needs macFUSE. Install it, allow its system extension, then retry:
        brew install --cask macfuse
    EOS
  end
end

class Terminalfs < Formula
  desc "FUSE filesystem that runs shell commands written into it"
  homepage "https://github.com/OWNER/terminalfs"
  url "https://github.com/OWNER/terminalfs/archive/refs/tags/v0.1.0.tar.gz"
  sha256 "0000000000000000000000000000000000000000000000000000000000000000"
  license "MIT"

  depends_on "rust" => :build

  on_macos do
    depends_on "pkgconf" => :build
    depends_on MacfuseInstalled
  end

  def install
    system "cargo", "install", *std_cargo_args
    # Completions and the man page come from the binary's own command-line definition.
    generate_completions_from_executable(bin/"terminalfs", "--completions")
    (man1/"terminalfs.1").write Utils.safe_popen_read(bin/"terminalfs", "--man")
    %w[check selftest].each do |name|
      (man1/"terminalfs-#{name}.1").write Utils.safe_popen_read(bin/"terminalfs", "--man", name)
    end
  end

  def caveats
    <<~EOS
      terminalfs runs whatever is written into its tree, as you. It is not a sandbox.

      It needs macFUSE (brew install --cask macfuse) on macOS, or fuse3 from your
      distribution on Linux. Write the default deny list once, then mount the tree at
      ~/mnt/terminalfs in the foreground:
        terminalfs --init-settings
        terminalfs
    EOS
  end

  test do
    assert_match version.to_s, shell_output("#{bin}/terminalfs --version")
    assert_match "--wait-timeout", shell_output("#{bin}/terminalfs --help")
    assert_match "TH terminalfs", shell_output("#{bin}/terminalfs --man")
  end
end
