"""The report: rendering, the browser, the committed sample, twins, the RO-Crate."""
