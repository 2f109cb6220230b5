"""Reports of findings: the one registry of report formats (:mod:`~curate.reports.formats`:
adding a format is one registration there), the text, JSON and Markdown renderings of a report
(:mod:`~curate.reports.render`), the verdict on each finding and rule that every CI format
renders (:mod:`~curate.reports.verdict`), the CI formats JUnit, SARIF and GitHub
(:mod:`~curate.reports.ci`), the HTML page (:mod:`~curate.reports.html`), and where a record
sits in its input file (:mod:`~curate.reports.locations`).

May import: ``curate.core``, ``curate.io`` and ``curate.families`` (a report names its
family's rules and draws its plots).
"""
