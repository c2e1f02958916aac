//! The sandbox's DNS responder: answers A for allowed names from the plan, and refuses
//! everything else locally. It never forwards a question, so a lookup carries nothing out.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Mutex;

use super::plan::{EgressPlan, Route};

const TYPE_A: u16 = 1;
const TYPE_ANY: u16 = 255;
const CLASS_IN: u16 = 1;
const RCODE_FORMERR: u8 = 1;
const RCODE_NXDOMAIN: u8 = 3;
const RCODE_NOTIMP: u8 = 4;
const RCODE_REFUSED: u8 = 5;

/// Names handed out so far, shared by the DNS responder and the connection handler.
pub(crate) struct NameTable {
    plan: EgressPlan,
    /// For each endpoint: the name a wildcard slot was handed to.
    slots: Mutex<Vec<Option<String>>>,
}

/// What a name resolves to inside the sandbox.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// The name is allowed and lives at this address.
    Allowed(Ipv4Addr),
    /// Allowed by a wildcard, but its pool is used up.
    PoolExhausted,
    /// Not allowed (or only reachable through an IPv6 literal, which DNS never hands out).
    Denied,
}

impl NameTable {
    pub(crate) fn new(plan: &EgressPlan) -> NameTable {
        NameTable {
            slots: Mutex::new(vec![None; plan.endpoints().len()]),
            plan: plan.clone(),
        }
    }

    /// The address for `name` (lowercase, no trailing dot), handing out a wildcard slot on first
    /// sight.
    pub(crate) fn lookup(&self, name: &str) -> Lookup {
        let v4 = |ip: IpAddr| match ip {
            IpAddr::V4(v4) => Lookup::Allowed(v4),
            IpAddr::V6(_) => Lookup::Denied,
        };
        // Only plain host names reach the plan, and through it the host's resolver.
        let plain = name.len() <= 253
            && name.split('.').all(|l| {
                !l.is_empty()
                    && l.len() <= 63
                    && l.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            });
        if !plain {
            return Lookup::Denied;
        }
        if let Some(i) = self.plan.endpoint_for_name(name) {
            return v4(self.plan.endpoints()[i].addr);
        }
        let pool = self.plan.pool_for_name(name);
        if pool.is_empty() {
            return Lookup::Denied;
        }
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&i) = pool.iter().find(|&&i| slots[i].as_deref() == Some(name)) {
            return v4(self.plan.endpoints()[i].addr);
        }
        match pool.iter().find(|&&i| slots[i].is_none()) {
            Some(&i) => {
                slots[i] = Some(name.to_string());
                v4(self.plan.endpoints()[i].addr)
            }
            None => Lookup::PoolExhausted,
        }
    }

    /// The host name connections to endpoint `index` go to, if any yet.
    pub(crate) fn host_of(&self, index: usize) -> Option<String> {
        match &self.plan.endpoints().get(index)?.route {
            Route::Name(n) => Some(n.clone()),
            Route::Ip(ip) => Some(ip.to_string()),
            Route::Wildcard(_) => self
                .slots
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(index)
                .cloned()
                .flatten(),
        }
    }
}

/// One question and the answer given, for the audit event.
#[derive(Debug)]
pub(crate) struct Answered {
    pub(crate) name: String,
    pub(crate) allowed: bool,
    pub(crate) note: Option<String>,
}

/// Answers one DNS message. `None` means drop it (not a query, or too short to answer).
pub(crate) fn answer(table: &NameTable, query: &[u8]) -> Option<(Vec<u8>, Answered)> {
    if query.len() < 12 || query[2] & 0x80 != 0 {
        return None;
    }
    let opcode = (query[2] >> 3) & 0x0f;
    let qdcount = u16::from_be_bytes([query[4], query[5]]);
    let fail = |rcode: u8, why: &str| {
        let mut out = query[..12].to_vec();
        out[2] = 0x80 | (query[2] & 0x79);
        out[3] = 0x80 | rcode;
        out[4..12].fill(0);
        let note = Answered {
            name: String::new(),
            allowed: false,
            note: Some(why.to_string()),
        };
        Some((out, note))
    };
    if opcode != 0 {
        return fail(RCODE_NOTIMP, "not a standard query");
    }
    if qdcount != 1 {
        return fail(RCODE_FORMERR, "not exactly one question");
    }
    let Some((name, end)) = parse_name(query, 12) else {
        return fail(RCODE_FORMERR, "malformed question");
    };
    if query.len() < end + 4 {
        return fail(RCODE_FORMERR, "malformed question");
    }
    let qtype = u16::from_be_bytes([query[end], query[end + 1]]);
    let qclass = u16::from_be_bytes([query[end + 2], query[end + 3]]);
    let question = &query[12..end + 4];

    let (rcode, address, allowed, note) = match table.lookup(&name) {
        Lookup::Allowed(ip) if qclass == CLASS_IN && (qtype == TYPE_A || qtype == TYPE_ANY) => {
            (0, Some(ip), true, None)
        }
        // Allowed name, other record type (AAAA, ...): no data, so clients fall back to A.
        Lookup::Allowed(_) => (0, None, true, None),
        Lookup::PoolExhausted => (
            RCODE_REFUSED,
            None,
            false,
            Some("wildcard address pool exhausted: REFUSED".to_string()),
        ),
        Lookup::Denied => (
            RCODE_NXDOMAIN,
            None,
            false,
            Some("name not allowed by the policy: NXDOMAIN".to_string()),
        ),
    };
    let mut out = Vec::with_capacity(question.len() + 28);
    out.extend_from_slice(&query[..2]);
    // QR, opcode 0, AA, RD copied; RA.
    out.push(0x80 | 0x04 | (query[2] & 0x01));
    out.push(0x80 | rcode);
    out.extend_from_slice(&1u16.to_be_bytes());
    out.extend_from_slice(&(address.is_some() as u16).to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 0]);
    out.extend_from_slice(question);
    if let Some(ip) = address {
        out.extend_from_slice(&[0xc0, 12]);
        out.extend_from_slice(&TYPE_A.to_be_bytes());
        out.extend_from_slice(&CLASS_IN.to_be_bytes());
        out.extend_from_slice(&300u32.to_be_bytes());
        out.extend_from_slice(&4u16.to_be_bytes());
        out.extend_from_slice(&ip.octets());
    }
    Some((
        out,
        Answered {
            name,
            allowed,
            note,
        },
    ))
}

/// Reads an uncompressed name at `at`; returns it lowercased (printable, escaped otherwise) and
/// the offset after it.
fn parse_name(msg: &[u8], mut at: usize) -> Option<(String, usize)> {
    let mut name = String::new();
    loop {
        let len = *msg.get(at)? as usize;
        at += 1;
        if len == 0 {
            break;
        }
        // Compression pointers and extended labels never appear in a question we accept.
        if len > 63 || name.len() + len > 254 {
            return None;
        }
        let label = msg.get(at..at + len)?;
        at += len;
        if !name.is_empty() {
            name.push('.');
        }
        for &b in label {
            if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
                name.push(b.to_ascii_lowercase() as char);
            } else {
                name.push_str(&format!("\\{b:03}"));
            }
        }
    }
    Some((name, at))
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy_runtime::HostPattern;

    fn query(name: &str, qtype: u16) -> Vec<u8> {
        let mut q = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
        for label in name.split('.') {
            q.push(label.len() as u8);
            q.extend_from_slice(label.as_bytes());
        }
        q.push(0);
        q.extend_from_slice(&qtype.to_be_bytes());
        q.extend_from_slice(&1u16.to_be_bytes());
        q
    }

    fn table(list: &[&str]) -> NameTable {
        let hosts: Vec<HostPattern> = list.iter().map(|s| s.parse().unwrap()).collect();
        NameTable::new(&EgressPlan::new(&hosts).unwrap())
    }

    #[test]
    fn answers_allowed_a() {
        let t = table(&["api.test:443"]);
        let (out, a) = answer(&t, &query("API.test", TYPE_A)).unwrap();
        assert!(a.allowed);
        assert_eq!(&out[..2], &[0x12, 0x34]);
        assert_eq!(out[3] & 0x0f, 0);
        assert_eq!(&out[out.len() - 4..], &[127, 0, 0, 2]);
    }

    #[test]
    fn nxdomain_for_others_nodata_for_aaaa() {
        let t = table(&["api.test:443"]);
        let (out, a) = answer(&t, &query("secret.evil.test", TYPE_A)).unwrap();
        assert!(!a.allowed);
        assert_eq!(out[3] & 0x0f, RCODE_NXDOMAIN);
        let (out, _) = answer(&t, &query("api.test", 28)).unwrap();
        assert_eq!(out[3] & 0x0f, 0);
        assert_eq!(&out[6..8], &[0, 0]);
    }

    #[test]
    fn wildcard_pool_hands_out_and_remembers() {
        let t = table(&["*.ex.test:443"]);
        let first = t.lookup("a.ex.test");
        assert_eq!(t.lookup("a.ex.test"), first);
        assert_ne!(t.lookup("b.ex.test"), first);
        for i in 0..40 {
            t.lookup(&format!("n{i}.ex.test"));
        }
        assert_eq!(t.lookup("late.ex.test"), Lookup::PoolExhausted);
        assert_eq!(t.lookup("ex.test"), Lookup::Denied);
        assert_eq!(t.lookup("a\\046b.ex.test"), Lookup::Denied);
        assert_eq!(t.lookup("a..ex.test"), Lookup::Denied);
    }

    #[test]
    fn garbage_is_dropped_or_formerr() {
        let t = table(&["api.test:443"]);
        assert!(answer(&t, &[1, 2, 3]).is_none());
        let mut q = query("api.test", TYPE_A);
        q[12] = 0xc0; // compression pointer in the question
        let (out, _) = answer(&t, &q).unwrap();
        assert_eq!(out[3] & 0x0f, RCODE_FORMERR);
    }
}
