package templates

// workflowStep and workflowJob are the parts of a rendered workflow the
// tests read: what each job runs, with what, where and after what.
type workflowStep struct {
	Uses string            `yaml:"uses"`
	Run  string            `yaml:"run"`
	With map[string]string `yaml:"with"`
	Env  map[string]string `yaml:"env"`
}

type workflowJob struct {
	If          string         `yaml:"if"`
	Needs       []string       `yaml:"needs"`
	Environment string         `yaml:"environment"`
	Steps       []workflowStep `yaml:"steps"`
}
