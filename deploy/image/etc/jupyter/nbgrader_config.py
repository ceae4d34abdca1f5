"""nbgrader for a course hub (deploy/hub/): every server mounts the course's exchange at
/srv/nbgrader/exchange; the course comes from the hub (LABTOOLS_COURSE); students are
told apart by their hub user name (JUPYTERHUB_USER), each runs under a user id of its own.
The instructor's course folder is ~/course (source/, release/, submitted/, autograded/...).
"""
import os

c = get_config()  # type: ignore[name-defined]  # noqa: F821 - nbgrader's config loader provides it
# seconds per cell while autograding (nbgrader's 30 is short for lab 7's hidden cross-tests
# on a busy server); the same as labtools.teach.notebook_files.GRADING_CELL_TIMEOUT_S
c.Execute.timeout = 300
try:  # autograde's kernels forked from one that imported the labs' modules (the kit's
    # labtools.instructor.grading_kernels, as in a course the kit made); nbgrader's own where
    # the kit or nbgrader is not installed (a student's server)
    from labtools.instructor.grading_kernels import autograde_preprocessors

    c.Autograde.autograde_preprocessors = autograde_preprocessors()
    # the feedback shows where hidden tests ran and what they raised, not their source
    # (labtools.instructor.hidden_test_feedback, as in a course the kit made)
    from labtools.instructor.hidden_test_feedback import feedback_preprocessors

    c.GenerateFeedback.preprocessors = feedback_preprocessors()
except ImportError:
    pass
c.Exchange.root = os.environ.get("NBGRADER_EXCHANGE", "/srv/nbgrader/exchange")
if os.environ.get("LABTOOLS_COURSE"):
    c.CourseDirectory.course_id = os.environ["LABTOOLS_COURSE"]
if os.environ.get("LABTOOLS_ROLE") == "instructor":
    c.CourseDirectory.root = os.path.join(os.environ.get("HOME", "/home/lab"), "course")
