//! `composer` (PTMP's TPComposer): builds every agent listed in its
//! `proxies` (each `{name, type, data}`), as `ptmp run` does at top level.
//! Composers may nest.

use crate::cfg::Cfg;
use crate::error::Result;
use crate::filter::plugin::Plugins;
use crate::Proxy;

/// Validate the `proxies` list of a composer (or of ptmper).
pub(crate) fn parse(c: &Cfg, plugins: &Plugins) -> Result<Vec<Proxy>> {
    let list = c
        .array_opt("proxies")?
        .ok_or_else(|| c.err("proxies", "(missing)", "a composer needs a proxies list"))?;
    parse_list(&c.agent, list, plugins)
}

/// Validate a list of proxies; names must be unique.
pub(crate) fn parse_list(
    owner: &str,
    list: &[serde_json::Value],
    plugins: &Plugins,
) -> Result<Vec<Proxy>> {
    let mut out: Vec<Proxy> = Vec::with_capacity(list.len());
    for (i, v) in list.iter().enumerate() {
        let at = if owner.is_empty() {
            format!("proxies[{i}]")
        } else {
            format!("{owner}.proxies[{i}]")
        };
        let p = Proxy::parse(&at, v, plugins)?;
        if out.iter().any(|q| q.name == p.name) {
            return Err(crate::Error::config(
                &p.name,
                format!("{at}.name"),
                format!("{:?}", p.name),
                "another proxy has the same name",
            ));
        }
        out.push(p);
    }
    Ok(out)
}
