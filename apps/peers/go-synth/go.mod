module jiffy/peers/gosynth

go 1.21
