package configfx_test

import (
	"fmt"

	"go.uber.org/fx"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/configfx"
)

// Module loads the file and the environment when fx.New builds the graph
// and provides the sections; a component depends on the section it reads.
func ExampleModule() {
	app := fx.New(fx.NopLogger,
		configfx.Module("", config.Optional(), config.WithEnviron([]string{"HOSTLOOM_LOCKING__PROVIDER=memory"})),
		fx.Invoke(func(l config.LockingConfig) { fmt.Println("provider:", l.Provider) }),
	)
	fmt.Println("err:", app.Err())
	// Output:
	// provider: memory
	// err: <nil>
}
