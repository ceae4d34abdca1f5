"""The instructor's wing: grading, the class report, the answer keys and the student edition.

Nothing on the student's side imports it (``tests/test_layers.py`` says so), and the student
edition (:mod:`labtools.instructor.student_edition`) leaves the whole folder out: a
student's copy of the kit holds no answer key and no grader, rather than holding them
disabled. It may import every other layer of the package.

- the answer keys of the written questions, per student's network:
  :mod:`~labtools.instructor.answer_keys` (the registry),
  :mod:`~labtools.instructor.answer_key_form` (a key's form and its rubric's conclusions),
  :mod:`~labtools.instructor.answer_key_questions` (labs 00-03),
  :mod:`~labtools.instructor.answer_key_sharing` (labs 04-06),
  :mod:`~labtools.instructor.measured_keys` (on the network a student measured) and
  :mod:`~labtools.instructor.answer_key_page` (one student's keys as an HTML page);
- the class report: :mod:`~labtools.instructor.class_data` (a class's results files read
  together), :mod:`~labtools.instructor.class_plots` and
  :mod:`~labtools.instructor.class_report`;
- autograding with nbgrader: :mod:`~labtools.instructor.class_grading` (several submissions
  at once), :mod:`~labtools.instructor.autograde_worker` (one worker),
  :mod:`~labtools.instructor.hidden_test_feedback` (feedback without the hidden tests'
  source) and the kernels forked from one that has imported what the labs import:
  :mod:`~labtools.instructor.grading_kernels` (nbgrader's side),
  :mod:`~labtools.instructor.kernel_fork_manager`,
  :mod:`~labtools.instructor.kernel_forks` (the server) and
  :mod:`~labtools.instructor.kernel_fork_client`, each kernel in a sandbox of its own
  (:mod:`~labtools.instructor.kernel_sandbox`, :mod:`~labtools.instructor.kernel_mounts`);
- the student edition: :mod:`~labtools.instructor.student_edition`;
- the instructor's subcommands (:mod:`labtools.instructor.commands`): ``answer-key``,
  ``autograde``, ``class-report`` and ``bundle``.
"""
