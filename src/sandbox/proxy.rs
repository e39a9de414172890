//! The HTTP proxy a sandboxed command with `allowedDomains` reaches the network through:
//! one per command, on a loopback port that command's Landlock rules let it connect to
//! (and nothing else). `CONNECT host:port` (HTTPS, the TLS untouched) and plain HTTP
//! requests in absolute form are forwarded when the host is an allowed name; the proxy
//! resolves it, so the command never needs a resolver. Anything else, a literal IP
//! address not listed included, is answered `403` with a sentence, logged in one line
//! and counted in the command's `result.json`. A name that resolves to a loopback,
//! private, link-local, unspecified or multicast address is refused too, unless the entry
//! that allows it is `localhost`, `*.localhost` or that very address. A plain HTTP
//! request's `Host` header is set to the host it goes to. At most [`MAX_CONNECTIONS`]
//! connections are served at once; more are closed.

use std::io::{Read, Write};
use std::net::{IpAddr, Shutdown, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::Domain;

/// The largest request head read before a request is refused.
const MAX_HEAD: usize = 64 * 1024;

/// How long a client may take to send its request head, and a server to accept.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// The most connections one proxy serves at once (each holds two threads).
const MAX_CONNECTIONS: usize = 64;

/// How long the accepting thread rests after a failed accept (out of descriptors, say)
/// before it tries again.
const ACCEPT_PAUSE: Duration = Duration::from_millis(50);

/// A running proxy; stops accepting when dropped.
#[derive(Debug)]
pub struct Proxy {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl Proxy {
    /// Starts a proxy for the command `name` that lets through `domains` and counts
    /// what it refuses in `refused`.
    pub fn start(
        name: &str,
        domains: Vec<Domain>,
        refused: Arc<AtomicU64>,
    ) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        let port = listener.local_addr()?.port();
        let stop = Arc::new(AtomicBool::new(false));
        let rules = Arc::new(Rules {
            name: name.to_owned(),
            domains,
            refused,
        });
        let stopping = stop.clone();
        let open = Arc::new(AtomicUsize::new(0));
        std::thread::Builder::new()
            .name("terminalfs-proxy".to_owned())
            .spawn(move || {
                for stream in listener.incoming() {
                    if stopping.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(stream) = stream else {
                        std::thread::sleep(ACCEPT_PAUSE);
                        continue;
                    };
                    if open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                        open.fetch_sub(1, Ordering::SeqCst);
                        crate::log::info(&format!(
                            "sandbox: {}: closed a connection to the proxy: \
                             {MAX_CONNECTIONS} are open already",
                            rules.name
                        ));
                        continue;
                    }
                    let slot = Slot(open.clone());
                    let rules = rules.clone();
                    let _ = std::thread::Builder::new()
                        .name("terminalfs-proxy-conn".to_owned())
                        .spawn(move || {
                            let _slot = slot;
                            rules.serve(stream)
                        });
                }
            })?;
        Ok(Proxy { port, stop })
    }

    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accepting thread, which then sees the flag and ends.
        let _ = TcpStream::connect_timeout(
            &std::net::SocketAddr::from(([127, 0, 0, 1], self.port)),
            Duration::from_secs(1),
        );
    }
}

/// One connection's place among [`MAX_CONNECTIONS`], given back when it ends (or when
/// its thread could not start).
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

struct Rules {
    name: String,
    domains: Vec<Domain>,
    refused: Arc<AtomicU64>,
}

/// What a request head asks for.
#[derive(Debug, PartialEq, Eq)]
enum Ask {
    /// `CONNECT host:port`.
    Tunnel { host: String, port: u16 },
    /// A plain HTTP request: the host, port, and the head rewritten in origin form.
    Forward {
        host: String,
        port: u16,
        head: Vec<u8>,
    },
}

/// Reads a request head; the error is the sentence a refusal gives.
fn parse(head: &[u8]) -> Result<Ask, String> {
    let text = std::str::from_utf8(head).map_err(|_| "the request is not text".to_owned())?;
    let mut lines = text.split("\r\n");
    let first = lines.next().unwrap_or("");
    let mut words = first.split(' ');
    let (Some(method), Some(target), Some(version)) = (words.next(), words.next(), words.next())
    else {
        return Err("the request line is malformed".to_owned());
    };
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = split_host_port(target, 443)?;
        return Ok(Ask::Tunnel { host, port });
    }
    let rest = target
        .strip_prefix("http://")
        .ok_or("only http:// URLs and CONNECT go through this proxy")?;
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/"),
    };
    let (host, port) = split_host_port(authority, 80)?;
    // The server is told the host the request goes to, whatever the client's header said.
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let mut out = format!("{method} {path} {version}\r\nHost: {authority}\r\n").into_bytes();
    for line in lines {
        let lower = line.to_ascii_lowercase();
        if lower.starts_with("proxy-") || lower.starts_with("host:") {
            continue;
        }
        out.extend_from_slice(line.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    Ok(Ask::Forward {
        host,
        port,
        head: out,
    })
}

fn split_host_port(authority: &str, default: u16) -> Result<(String, u16), String> {
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or("a bracketed address is not closed")?;
        let port = match after.strip_prefix(':') {
            Some(port) => port.parse().map_err(|_| "the port is not a number")?,
            None => default,
        };
        return Ok((host.to_owned(), port));
    }
    match authority.rsplit_once(':') {
        Some((host, port)) => Ok((
            host.to_owned(),
            port.parse()
                .map_err(|_| "the port is not a number".to_owned())?,
        )),
        None => Ok((authority.to_owned(), default)),
    }
}

impl Rules {
    fn allowed(&self, host: &str) -> bool {
        self.domains.iter().any(|domain| domain.matches(host))
    }

    /// Whether `host`, resolved to `ip`, may be reached: an address inside this machine
    /// or its networks only when the entry allowing the host names localhost or `ip`.
    fn reachable(&self, host: &str, ip: IpAddr) -> bool {
        !internal(ip)
            || self.domains.iter().any(|domain| {
                domain.matches(host)
                    && match domain {
                        Domain::Exact(name) => {
                            name == "localhost" || name.parse::<IpAddr>() == Ok(ip)
                        }
                        Domain::Below(name) => name == "localhost",
                    }
            })
    }

    fn refuse(&self, client: &mut TcpStream, what: &str, why: &str) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        crate::log::info(&format!(
            "sandbox: {}: refused a connection to {what}: {why}",
            self.name
        ));
        let body = format!("terminalfs sandbox refused {what}: {why}\n");
        let _ = write!(
            client,
            "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        );
    }

    fn serve(&self, mut client: TcpStream) {
        let _ = client.set_read_timeout(Some(HEAD_TIMEOUT));
        let mut buffer = Vec::new();
        let mut chunk = [0u8; 4096];
        let end = loop {
            if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                break at;
            }
            if buffer.len() > MAX_HEAD {
                return self.refuse(&mut client, "a request", "its head is too long");
            }
            match client.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        };
        let ask = match parse(&buffer[..end]) {
            Ok(ask) => ask,
            Err(why) => return self.refuse(&mut client, "a request", &why),
        };
        let (host, port) = match &ask {
            Ask::Tunnel { host, port } | Ask::Forward { host, port, .. } => (host.clone(), *port),
        };
        let what = format!("{host}:{port}");
        if !self.allowed(&host) {
            return self.refuse(
                &mut client,
                &what,
                "the host is not in sandbox.network.allowedDomains",
            );
        }
        let addrs = match (host.as_str(), port).to_socket_addrs() {
            Ok(addrs) => Ok(addrs.collect::<Vec<_>>()),
            Err(err) => Err(format!("cannot resolve it ({err})")),
        };
        if let Ok(addrs) = &addrs {
            if !addrs.is_empty() && addrs.iter().all(|a| !self.reachable(&host, a.ip())) {
                return self.refuse(
                    &mut client,
                    &what,
                    "it resolves to a loopback, private, link-local or multicast address, \
                     which only an allowedDomains entry of localhost or of that address reaches",
                );
            }
        }
        let server = addrs.and_then(|addrs| {
            let mut last = "it has no address".to_owned();
            for addr in addrs.into_iter().filter(|a| self.reachable(&host, a.ip())) {
                match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
                    Ok(stream) => return Ok(stream),
                    Err(err) => last = format!("cannot connect to {addr} ({err})"),
                }
            }
            Err(last)
        });
        let mut server = match server {
            Ok(server) => server,
            Err(why) => {
                crate::log::info(&format!("sandbox: {}: {what}: {why}", self.name));
                let body = format!("terminalfs proxy: {what}: {why}\n");
                let _ = write!(
                    client,
                    "HTTP/1.1 502 Bad Gateway\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                return;
            }
        };
        let rest = &buffer[end + 4..];
        let sent = match &ask {
            Ask::Tunnel { .. } => client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .and_then(|()| server.write_all(rest)),
            Ask::Forward { head, .. } => server
                .write_all(head)
                .and_then(|()| server.write_all(b"\r\n"))
                .and_then(|()| server.write_all(rest)),
        };
        if sent.is_err() {
            return;
        }
        let _ = client.set_read_timeout(None);
        splice(client, server);
    }
}

/// Whether `ip` is this machine's or its local networks': loopback, private (RFC 1918,
/// fc00::/7), link-local, unspecified, broadcast or multicast.
fn internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
        }
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => internal(IpAddr::V4(v4)),
            None => {
                let first = v6.segments()[0];
                v6.is_loopback()
                    || v6.is_unspecified()
                    || v6.is_multicast()
                    || first & 0xfe00 == 0xfc00
                    || first & 0xffc0 == 0xfe80
            }
        },
    }
}

/// Copies both ways until each side has ended.
fn splice(client: TcpStream, server: TcpStream) {
    let (Ok(client_back), Ok(server_back)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    let upstream = std::thread::Builder::new()
        .name("terminalfs-proxy-up".to_owned())
        .spawn(move || copy(client, server));
    copy(server_back, client_back);
    if let Ok(upstream) = upstream {
        let _ = upstream.join();
    }
}

fn copy(mut from: TcpStream, mut to: TcpStream) {
    let _ = std::io::copy(&mut from, &mut to);
    let _ = to.shutdown(Shutdown::Write);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_read() {
        assert_eq!(
            parse(b"CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443"),
            Ok(Ask::Tunnel {
                host: "pypi.org".into(),
                port: 443
            })
        );
        let Ok(Ask::Forward { host, port, head }) = parse(
            b"GET http://localhost:8080/a?b HTTP/1.1\r\nHost: localhost\r\nProxy-Connection: x",
        ) else {
            panic!("a forward");
        };
        assert_eq!((host.as_str(), port), ("localhost", 8080));
        assert_eq!(head, b"GET /a?b HTTP/1.1\r\nHost: localhost:8080\r\n");
        // The server hears of the host the request goes to, not of the client's choice.
        let Ok(Ask::Forward { head, .. }) =
            parse(b"GET http://u@a.example/ HTTP/1.1\r\nhost: internal.corp\r\nAccept: */*")
        else {
            panic!("a forward");
        };
        assert_eq!(
            head,
            b"GET / HTTP/1.1\r\nHost: a.example\r\nAccept: */*\r\n"
        );
        assert!(parse(b"GET /relative HTTP/1.1").is_err());
        assert!(parse(b"garbage").is_err());
        assert_eq!(
            split_host_port("[::1]:8080", 80),
            Ok(("::1".to_owned(), 8080))
        );
    }

    #[test]
    fn addresses_inside_need_an_entry_naming_them() {
        let rules = |entries: &[&str]| Rules {
            name: "t".to_owned(),
            domains: entries.iter().map(|e| Domain::parse(e).unwrap()).collect(),
            refused: Arc::default(),
        };
        let ip = |text: &str| text.parse::<IpAddr>().unwrap();
        for inside in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "224.0.0.1",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "ff02::1",
            "::ffff:10.0.0.1",
        ] {
            assert!(internal(ip(inside)), "{inside}");
            assert!(!rules(&["*.example.com"]).reachable("a.example.com", ip(inside)));
        }
        for outside in ["93.184.216.34", "2606:2800:220:1::1", "::ffff:8.8.8.8"] {
            assert!(!internal(ip(outside)), "{outside}");
            assert!(rules(&["*.example.com"]).reachable("a.example.com", ip(outside)));
        }
        assert!(rules(&["localhost"]).reachable("localhost", ip("127.0.0.1")));
        let below_localhost = Rules {
            domains: vec![Domain::Below("localhost".to_owned())],
            ..rules(&[])
        };
        assert!(below_localhost.reachable("a.localhost", ip("::1")));
        assert!(rules(&["10.1.2.3"]).reachable("10.1.2.3", ip("10.1.2.3")));
        // An entry for another name does not open the address a rebinding name gives.
        assert!(!rules(&["localhost", "evil.example"]).reachable("evil.example", ip("127.0.0.1")));
    }

    /// A proxy serves [`MAX_CONNECTIONS`] at once and closes the one over them; a place
    /// freed serves again.
    #[test]
    fn connections_over_the_cap_are_closed() {
        let proxy = Proxy::start("t", Vec::new(), Arc::default()).unwrap();
        let at = std::net::SocketAddr::from(([127, 0, 0, 1], proxy.port()));
        let held: Vec<TcpStream> = (0..MAX_CONNECTIONS)
            .map(|_| TcpStream::connect(at).unwrap())
            .collect();
        let mut over = TcpStream::connect(at).unwrap();
        over.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut byte = [0u8; 1];
        assert_eq!(
            over.read(&mut byte).unwrap(),
            0,
            "the connection over the cap is closed"
        );
        drop(held);
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let mut client = TcpStream::connect(at).unwrap();
            client
                .set_read_timeout(Some(Duration::from_secs(20)))
                .unwrap();
            client.write_all(b"garbage\r\n\r\n").unwrap();
            let mut answer = String::new();
            let _ = client.read_to_string(&mut answer);
            if answer.starts_with("HTTP/1.1 403") {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no place was freed: {answer:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
