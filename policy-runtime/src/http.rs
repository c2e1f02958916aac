//! An HTTP client that reaches only the endpoints a tool's `net` declares (feature `http`).
//!
//! [`PolicyClient`] wraps a blocking reqwest client so that a tool body cannot reach another
//! host even when it builds its own URL:
//!
//! * every request's URL is judged by [`crate::net::admit_url`] (the gate's own rule: `host:port`
//!   with the scheme's default port, the sandbox's wildcards, IP literals only as declared)
//!   before a connection is opened;
//! * every redirect is judged the same way, and a refused hop fails the request (at most 10);
//! * names are resolved by a resolver that answers only names some declared pattern admits, so
//!   the connection goes to what the name resolved to at that one lookup;
//! * proxies from the environment (`HTTP_PROXY`, `ALL_PROXY`, ...) are ignored, so the
//!   connection goes to the URL's host and nowhere else.
//!
//! An unspecified `net` counts as `"deny"`. Requests are built as [`Request`] values and sent
//! with [`PolicyClient::execute`]; the wrapped client is never handed out. TLS comes from
//! reqwest's features: enable one (e.g. `reqwest = { features = ["rustls"] }` in your crate) for
//! `https` URLs.
//!
//! ```no_run
//! use policy_runtime::http::PolicyClient;
//! use policy_runtime::policy::ToolPolicy;
//!
//! let policy = ToolPolicy::from_json_str("p", r#"{"net": {"hosts": ["api.example.com:80"]}}"#)?;
//! let client = PolicyClient::new(&policy)?;
//! let status = client.get("http://api.example.com/v1/status")?.text()?;
//! assert!(client.get("http://evil.example/").is_err()); // never connects
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub use reqwest;

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use reqwest::blocking::{Client, Request, Response};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::{redirect, Method};
use url::Url;

use crate::host::{HostMatch, PortMatch};
use crate::net::admit_url;
use crate::policy::{NetPolicy, Stance, ToolPolicy};

/// Redirects followed at most.
pub const MAX_REDIRECTS: usize = 10;

/// Why a request was not made or failed.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The URL (or a redirect's) is not an endpoint the policy admits; nothing was sent to it.
    #[error("refused `{url}`: {reason}")]
    NotAllowed {
        /// The URL refused.
        url: String,
        /// Why, as the gate words it.
        reason: String,
    },
    /// The text is not a URL.
    #[error("`{url}` is not a valid URL: {error}")]
    InvalidUrl {
        /// The text given.
        url: String,
        /// What the parser said.
        error: url::ParseError,
    },
    /// The request itself failed (connection, protocol, body).
    #[error(transparent)]
    Request(reqwest::Error),
}

impl From<reqwest::Error> for HttpError {
    /// A refusal raised inside reqwest (a redirect) comes back as [`HttpError::NotAllowed`].
    fn from(error: reqwest::Error) -> HttpError {
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&error);
        while let Some(e) = source {
            if let Some(HttpError::NotAllowed { url, reason }) = e.downcast_ref::<HttpError>() {
                return HttpError::NotAllowed {
                    url: url.clone(),
                    reason: reason.clone(),
                };
            }
            source = e.source();
        }
        HttpError::Request(error)
    }
}

/// A blocking HTTP client held to one tool's `net` stance.
#[derive(Clone, Debug)]
pub struct PolicyClient {
    inner: Client,
    net: Arc<NetPolicy>,
}

impl PolicyClient {
    /// A client for `policy`'s `net` stance (unspecified counts as `"deny"`).
    pub fn new(policy: &ToolPolicy) -> Result<PolicyClient, HttpError> {
        PolicyClient::with_builder(policy, Client::builder())
    }

    /// Like [`PolicyClient::new`], from a builder with your own settings (timeouts, headers,
    /// TLS); its proxy, redirect and resolver settings are replaced.
    pub fn with_builder(
        policy: &ToolPolicy,
        builder: reqwest::blocking::ClientBuilder,
    ) -> Result<PolicyClient, HttpError> {
        let net = Arc::new(policy.net.clone().unwrap_or(NetPolicy::Deny));
        let hops = net.clone();
        let inner = builder
            .no_proxy()
            .redirect(redirect::Policy::custom(move |attempt| {
                if attempt.previous().len() >= MAX_REDIRECTS {
                    return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
                }
                match admit_url(&hops, attempt.url()) {
                    Ok(()) => attempt.follow(),
                    Err(reason) => {
                        let url = attempt.url().to_string();
                        attempt.error(HttpError::NotAllowed {
                            url,
                            reason: format!(
                                "a redirect may not leave the declared endpoints. {reason}"
                            ),
                        })
                    }
                }
            }))
            .dns_resolver(Arc::new(PinnedResolver { net: net.clone() }))
            .build()
            .map_err(HttpError::Request)?;
        Ok(PolicyClient { inner, net })
    }

    /// Judges `url` against the policy: the parsed URL when admitted.
    pub fn check(&self, url: &str) -> Result<Url, HttpError> {
        let parsed = Url::parse(url).map_err(|error| HttpError::InvalidUrl {
            url: url.to_string(),
            error,
        })?;
        admit_url(&self.net, &parsed).map_err(|reason| HttpError::NotAllowed {
            url: parsed.to_string(),
            reason,
        })?;
        Ok(parsed)
    }

    /// A request for an admitted URL, to fill in (headers, body) and [`PolicyClient::execute`].
    pub fn request(&self, method: Method, url: &str) -> Result<Request, HttpError> {
        Ok(Request::new(method, self.check(url)?))
    }

    /// Sends `request` after judging its URL (which may have been changed since it was built).
    pub fn execute(&self, request: Request) -> Result<Response, HttpError> {
        self.check(request.url().as_str())?;
        Ok(self.inner.execute(request)?)
    }

    /// `GET url`.
    pub fn get(&self, url: &str) -> Result<Response, HttpError> {
        self.execute(self.request(Method::GET, url)?)
    }
}

/// Resolves only names that some declared pattern admits (on any port: the port is judged
/// with the whole URL before the request), with the system resolver.
struct PinnedResolver {
    net: Arc<NetPolicy>,
}

impl PinnedResolver {
    fn admits(&self, name: &str) -> bool {
        match self.net.stance() {
            Stance::Anything => true,
            Stance::Nothing => false,
            Stance::Only(patterns) => patterns.iter().any(|p| {
                // Any port the pattern admits: the port is judged with the URL.
                let port = match p.port {
                    PortMatch::Port(port) => port,
                    PortMatch::Any => 1,
                };
                !matches!(p.host, HostMatch::Ip(_)) && p.matches_name(name, port)
            }),
        }
    }
}

impl Resolve for PinnedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_string();
        let admitted = self.admits(&host);
        Box::pin(async move {
            if !admitted {
                return Err(Box::new(HttpError::NotAllowed {
                    url: host.clone(),
                    reason: format!(
                        "`{host}` is not a host this tool may reach, so it is not resolved"
                    ),
                })
                    as Box<dyn std::error::Error + Send + Sync>);
            }
            let addrs: Vec<SocketAddr> = (host.as_str(), 0).to_socket_addrs()?.collect();
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}
