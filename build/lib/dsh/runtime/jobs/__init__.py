"""Background jobs: the job service (each agent's jobs, their logged starts and outcomes, their settlement
notices), the `job_output` / `job_kill` / `job_list` tools and the jobs prompt section, and the `jobs` plugin."""

from ._plugin import background_jobs as background_jobs
from ._plugin import plugin as plugin
from ._service import JOBS as JOBS
from ._service import LOST as LOST
from ._service import NOTICE_SOURCE as NOTICE_SOURCE
from ._service import Job as Job
from ._service import JobEnd as JobEnd
from ._service import JobIO as JobIO
from ._service import Jobs as Jobs
from ._service import JobsConfig as JobsConfig
from ._service import JobService as JobService
from ._service import JobStatus as JobStatus
from ._service import UnknownJobError as UnknownJobError
from ._service import Work as Work
from ._tools import JOB_TOOLS as JOB_TOOLS
from ._tools import SECTION as SECTION
from ._tools import job_tools as job_tools
from ._tools import read as read

__all__ = [
    "JOBS",
    "JOB_TOOLS",
    "LOST",
    "NOTICE_SOURCE",
    "SECTION",
    "Job",
    "JobEnd",
    "JobIO",
    "JobService",
    "JobStatus",
    "Jobs",
    "JobsConfig",
    "UnknownJobError",
    "Work",
    "background_jobs",
    "job_tools",
    "plugin",
    "read",
]
